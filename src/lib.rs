//! evsparse: event-driven sparse kernels for spiking networks and sparse HPC, with a stable
//! C ABI (see `include/evsparse.h`).
//!
//! Layers: [`ffi`] (the C ABI: argument checks, handles, status codes, panic boundary) over
//! [`core`] (types, validation, dispatch) over the backends ([`cpu`], [`cuda`]).

#![allow(non_camel_case_types)]

pub mod core;
pub mod cpu;
pub mod cuda;
pub mod dtype;
pub mod error;
pub mod ffi;

/// Major version (semantic versioning; the SONAME carries it).
pub const EVS_VERSION_MAJOR: u32 = 0;
/// Minor version.
pub const EVS_VERSION_MINOR: u32 = 1;
/// Patch version.
pub const EVS_VERSION_PATCH: u32 = 0;
