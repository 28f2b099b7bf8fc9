//! The committed header must be what the build generates (run `make header` after changing
//! the C API), and the version macros must match Cargo.toml.

#[test]
fn committed_header_matches_generated() {
    let generated = include_str!(concat!(env!("OUT_DIR"), "/evsparse.h"));
    let committed = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/evsparse.h")).unwrap();
    assert!(generated == committed, "include/evsparse.h is stale: run `make header` and commit the result");
}

#[test]
fn version_constants_match_cargo() {
    let version = env!("CARGO_PKG_VERSION");
    let expected =
        format!("{}.{}.{}", evsparse::EVS_VERSION_MAJOR, evsparse::EVS_VERSION_MINOR, evsparse::EVS_VERSION_PATCH);
    assert_eq!(version, expected);
    let c = unsafe { std::ffi::CStr::from_ptr(evsparse::ffi::evs_version()) };
    assert_eq!(c.to_str().unwrap(), version);
}

#[test]
fn every_exported_function_is_documented_in_the_header() {
    let header = include_str!(concat!(env!("OUT_DIR"), "/evsparse.h"));
    let lines: Vec<&str> = header.lines().collect();
    let mut functions = 0;
    for (i, line) in lines.iter().enumerate() {
        if line.starts_with("evs_status evs_") || line.starts_with("const char *evs_") {
            functions += 1;
            assert!(i > 0 && lines[i - 1].trim_start().starts_with("*/"), "no doc comment before `{line}`");
        }
    }
    // Every `pub extern "C"` function of src/ffi appears, so the header covers the whole ABI.
    let sources =
        [include_str!("../src/ffi/mod.rs"), include_str!("../src/ffi/handles.rs"), include_str!("../src/ffi/ops.rs")];
    let exported: usize = sources.iter().map(|s| s.matches("extern \"C\" fn evs_").count()).sum();
    assert_eq!(functions, exported, "header declares {functions} functions, the sources export {exported}");
    assert!(functions >= 47);
}

#[test]
fn header_lists_every_algorithm() {
    let header = include_str!(concat!(env!("OUT_DIR"), "/evsparse.h"));
    let doc = header.split("evs_status evs_context_set_algorithm(").next().unwrap();
    for (family, algorithms) in evsparse::core::plan::FAMILIES {
        let line = doc
            .lines()
            .find(|l| l.contains(&format!("- `{family}`")))
            .unwrap_or_else(|| panic!("the evs_context_set_algorithm doc lacks family {family}"));
        for alg in *algorithms {
            assert!(line.contains(&format!("`{alg}`")), "the doc line of {family} lacks {alg}: {line}");
        }
    }
}
