//! The estimator: being built.
