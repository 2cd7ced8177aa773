//! tributary-codec
