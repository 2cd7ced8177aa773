//! Human units in scenario files: rates, sizes, durations and fractions. They live in the
//! simulator (application options use them too); see [`tributary_sim::units`].

pub use tributary_sim::units::*;
