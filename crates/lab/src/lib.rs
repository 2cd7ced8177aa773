//! tributary-lab
