fn main() -> std::process::ExitCode {
    mpicast::cli::main()
}
