//! Generates the C header, gives the shared library its SONAME, and compiles `kernels/*.cu`
//! with nvcc into one fatbin that the library embeds (CPU-only build when nvcc is missing).

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let crate_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    generate_header(&crate_dir, &out_dir);

    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap();
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libevsparse.so.{major}");
    }
    build_kernels(&crate_dir, &out_dir);
}

fn generate_header(crate_dir: &Path, out_dir: &Path) {
    let mut config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let version = std::env::var("CARGO_PKG_VERSION").unwrap();
    config.after_includes = Some(format!("\n/** The version this header belongs to; evs_version() gives the library's. */\n#define EVS_VERSION_STRING \"{version}\"\n"));
    cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(config)
        .generate()
        .expect("generating include/evsparse.h")
        .write_to_file(out_dir.join("evsparse.h"));
}

/// Default targets: sm_80 and sm_90a machine code, plus compute_80 PTX for newer GPUs.
const DEFAULT_ARCHS: &str = "80,90a";

/// Compiles every kernel source as one translation unit into `OUT_DIR/evsparse.fatbin` and
/// sets `cfg(evs_kernels)`. ptxas' register/spill report goes to `OUT_DIR/ptxas-report.txt`.
fn build_kernels(crate_dir: &Path, out_dir: &Path) {
    println!("cargo::rustc-check-cfg=cfg(evs_kernels)");
    for var in ["NVCC", "CUDA_HOME", "CUDA_PATH", "EVS_CUDA_ARCHS", "EVS_REQUIRE_CUDA", "PATH"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let kernels = crate_dir.join("kernels");
    println!("cargo:rerun-if-changed={}", kernels.display());
    let Some(nvcc) = find_nvcc(crate_dir) else {
        if std::env::var("EVS_REQUIRE_CUDA").is_ok_and(|v| v == "1") {
            panic!("EVS_REQUIRE_CUDA=1 but nvcc was not found (set NVCC or CUDA_HOME, or run `make`)");
        }
        println!(
            "cargo:warning=nvcc not found (NVCC, CUDA_HOME, CUDA_PATH, PATH, .tools/): building evsparse \
             CPU-only; CUDA contexts will return EVS_ERROR_DEVICE_UNAVAILABLE. `make build` installs nvcc."
        );
        return;
    };

    let mut sources: Vec<PathBuf> = std::fs::read_dir(&kernels)
        .expect("kernels/")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cu"))
        .collect();
    sources.sort();
    let unit: String = sources.iter().map(|p| format!("#include \"{}\"\n", p.display())).collect();
    let unit_path = out_dir.join("evsparse_kernels.cu");
    std::fs::write(&unit_path, unit).unwrap();

    let fatbin = out_dir.join("evsparse.fatbin");
    let mut cmd = Command::new(&nvcc);
    // compressed for size: the fatbin is embedded in the library and in every test binary of
    // the GPU bundle (2.4 MB instead of 3.9 for sm_90a; the driver inflates it once per context)
    cmd.args(["-fatbin", "-O3", "-std=c++17", "-lineinfo", "-Xptxas", "-v", "-Werror", "all-warnings"])
        .arg("--compress-mode=size")
        .arg(format!("-I{}", kernels.display()))
        .args(gencode_flags())
        .arg("-o")
        .arg(&fatbin)
        .arg(&unit_path);
    let output = cmd.output().unwrap_or_else(|e| panic!("running {}: {e}", nvcc.display()));
    let log = String::from_utf8_lossy(&output.stderr).into_owned() + &String::from_utf8_lossy(&output.stdout);
    std::fs::write(out_dir.join("ptxas-report.txt"), &log).unwrap();
    if !output.status.success() {
        panic!("nvcc failed on kernels/ ({}):\n{log}", nvcc.display());
    }
    println!("cargo:rustc-cfg=evs_kernels");
}

/// `-gencode` flags for `EVS_CUDA_ARCHS` (comma-separated, e.g. "80,90a"): machine code for
/// each, PTX for the first so newer GPUs can JIT it. Arch-specific targets ("90a") need the
/// long form; nvcc rejects `-arch=sm_90a` with -fatbin.
fn gencode_flags() -> Vec<String> {
    let archs = std::env::var("EVS_CUDA_ARCHS").unwrap_or_else(|_| DEFAULT_ARCHS.to_string());
    let archs: Vec<&str> = archs.split(',').map(str::trim).filter(|a| !a.is_empty()).collect();
    let mut flags: Vec<String> = archs.iter().map(|a| format!("-gencode=arch=compute_{a},code=sm_{a}")).collect();
    if let Some(first) = archs.first().filter(|a| !a.ends_with('a')) {
        flags.push(format!("-gencode=arch=compute_{first},code=compute_{first}"));
    }
    flags
}

/// nvcc from NVCC, CUDA_HOME/CUDA_PATH, PATH, or the Makefile's project-local wheels.
fn find_nvcc(crate_dir: &Path) -> Option<PathBuf> {
    let env_path = |var: &str| std::env::var_os(var).map(PathBuf::from);
    let mut candidates: Vec<PathBuf> = Vec::new();
    candidates.extend(env_path("NVCC"));
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        candidates.extend(env_path(var).map(|d| d.join("bin/nvcc")));
    }
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path).map(|d| d.join("nvcc")));
    }
    let venv = crate_dir.join(".tools/venv/lib");
    if let Ok(pythons) = std::fs::read_dir(&venv) {
        candidates.extend(pythons.flatten().map(|p| p.path().join("site-packages/nvidia/cu13/bin/nvcc")));
    }
    candidates.into_iter().find(|p| p.is_file())
}
