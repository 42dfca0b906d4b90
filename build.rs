//! Finds SimGrid with pkg-config, generates the FFI bindings that src/sim wraps and compiles
//! src/sim/blocking.cpp (s4u calls the C API lacks).
//!
//! Override: set MPICAST_SIMGRID_PREFIX to a SimGrid install prefix (it must hold include/ and lib/)
//! to bypass pkg-config.

use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=src/sim/wrapper.h");
    println!("cargo:rerun-if-env-changed=MPICAST_SIMGRID_PREFIX");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");

    let include_paths = match env::var("MPICAST_SIMGRID_PREFIX") {
        Ok(prefix) => {
            let prefix = PathBuf::from(prefix);
            println!("cargo:rustc-link-search=native={}", prefix.join("lib").display());
            println!("cargo:rustc-link-lib=simgrid");
            vec![prefix.join("include")]
        }
        Err(_) => match pkg_config::Config::new().atleast_version("3.30").probe("simgrid") {
            Ok(lib) => lib.include_paths,
            Err(e) => {
                eprintln!(
                    "mpicast build: SimGrid not found through pkg-config ({e}).\n\
                     Install it with `apt-get install libsimgrid-dev` (run scripts/setup.sh), \
                     or set MPICAST_SIMGRID_PREFIX to a SimGrid install prefix."
                );
                std::process::exit(1);
            }
        },
    };

    // Blocking receives and sends in one simcall, executions in two (src/sim/blocking.cpp): s4u
    // only.
    println!("cargo:rerun-if-changed=src/sim/blocking.cpp");
    let mut shim = cc::Build::new();
    shim.cpp(true).std("c++17").file("src/sim/blocking.cpp").warnings(false);
    for path in &include_paths {
        shim.include(path);
    }
    shim.compile("mpicast_simgrid_blocking");

    let mut builder = bindgen::Builder::default()
        .header("src/sim/wrapper.h")
        .clang_arg("-xc")
        // SimGrid kills actors by unwinding a C++ exception through actor frames: every function
        // that can reach an actor switch must allow unwinding.
        .override_abi(bindgen::Abi::CUnwind, ".*")
        .allowlist_function("sg_.*|simgrid_.*|xbt_log_control_set|xbt_dynar_new|xbt_dynar_free|xbt_dynar_length|xbt_dynar_get_ptr")
        .allowlist_type("sg_.*|s4u_.*|xbt_main_func_t")
        .layout_tests(false)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()));
    for path in &include_paths {
        builder = builder.clang_arg(format!("-I{}", path.display()));
    }
    let bindings = match builder.generate() {
        Ok(b) => b,
        Err(e) => {
            eprintln!(
                "mpicast build: bindgen could not read the SimGrid headers ({e}).\n\
                 bindgen needs libclang: `apt-get install libclang-dev` (run scripts/setup.sh)."
            );
            std::process::exit(1);
        }
    };
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    bindings
        .write_to_file(out.join("simgrid_bindings.rs"))
        .expect("writing bindings into OUT_DIR");
    find_mimalloc();
}

/// Finds mimalloc (Debian's libmimalloc-dev) and records its shared library's path, which
/// `sim::child` preloads into simulation children of up to 16,384 ranks: every allocation of
/// the child goes to it, SimGrid's C++ objects (a few per simulated message) included. glibc's
/// malloc spent about a fifth of a 1,024-rank replay in its own bookkeeping (consolidating free
/// chunks); with mimalloc that replay took about half the wall time. Larger replays keep glibc,
/// which leaves the fresh pages of the actors' calloc'ed stacks untouched where mimalloc cleared
/// them (65,536 ranks of pi_dartboard: 5.4 GiB against 2.2 GiB). Without the library the
/// children keep the C library's allocator, and the build says so; MPICAST_NO_MIMALLOC=1 at
/// build or run time does the same on purpose.
fn find_mimalloc() {
    println!("cargo:rerun-if-env-changed=MPICAST_NO_MIMALLOC");
    if env::var_os("MPICAST_NO_MIMALLOC").is_some() {
        return;
    }
    // The compiler prints the library's full path when its search path has it, else the name.
    let found = cc::Build::new()
        .get_compiler()
        .to_command()
        .arg("-print-file-name=libmimalloc.so")
        .output()
        .ok()
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .filter(|p| p.is_absolute())
        .and_then(|p| p.canonicalize().ok());
    match found {
        Some(path) => println!("cargo:rustc-env=MPICAST_MIMALLOC_SO={}", path.display()),
        None => println!(
            "cargo:warning=libmimalloc.so not found (apt-get install libmimalloc-dev, or run scripts/setup.sh): \
             simulations keep the C library's allocator and run slower"
        ),
    }
}
