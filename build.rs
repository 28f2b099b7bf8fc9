//! Generates the C header and gives the shared library its SONAME.

use std::path::PathBuf;

fn main() {
    let crate_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");

    let mut config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let version = std::env::var("CARGO_PKG_VERSION").unwrap();
    config.after_includes = Some(format!("\n/** The version this header belongs to; evs_version() gives the library's. */\n#define EVS_VERSION_STRING \"{version}\"\n"));
    cbindgen::Builder::new()
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()
        .expect("generating include/evsparse.h")
        .write_to_file(out_dir.join("evsparse.h"));

    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap();
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libevsparse.so.{major}");
    }
}
