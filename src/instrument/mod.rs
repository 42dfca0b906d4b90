//! Instrumented runs (`mpicast trace`): being built.
