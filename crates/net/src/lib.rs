//! tributary-net
