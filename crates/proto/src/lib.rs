//! tributary-proto
