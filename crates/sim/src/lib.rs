//! tributary-sim
