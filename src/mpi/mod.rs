//! What every stage that builds or runs a user's MPI program shares: the build model (`build`),
//! the one launcher (`launch`: every mpirun/srun command line), and running a child with a time
//! limit (`run`), and the span of a real run between MPI_Init and MPI_Finalize (`span`); and
//! MPI's Cartesian topology arithmetic (`cart`), which the static interpreter and trace
//! scaling compute as an MPI library does.

pub mod build;
pub mod cart;
pub mod launch;
pub mod run;
pub mod span;
pub mod startup;
