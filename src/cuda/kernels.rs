//! The kernel table: every kernel of kernels/*.cu resolved to a function handle once, when a
//! context loads the module, so that a launch is an array index (no name formatting, no map).
//!
//! Kernels are instantiated under `<family>`, `<family>_<a>` or `<family>_<a>_<b>`, where `a`
//! and `b` are dtype names of the C API (kernels/common.cuh). A slot of the table is
//! (family, a, b), with "no dtype" as its own value; combinations a family does not
//! instantiate stay empty. The module's functions are enumerated, not looked up by every
//! possible name, so that no driver call fails (compute-sanitizer reports failed calls).

use super::driver::{call, Function};
use crate::dtype::DType;
use crate::error::{Error, Result};
use cudarc::driver::sys;
use std::collections::HashMap;
use std::ffi::CStr;

/// A family of kernels: the name prefix its instantiations share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Family(usize);

macro_rules! families {
    ($($id:ident = $name:literal,)*) => {
        /// Name prefix of each family, indexed by `Family`.
        const NAMES: &[&str] = &[$($name),*];
        families!(@consts 0usize, $($id,)*);
    };
    (@consts $n:expr, $id:ident, $($rest:ident,)*) => {
        pub const $id: Family = Family($n);
        families!(@consts $n + 1usize, $($rest,)*);
    };
    (@consts $n:expr,) => {};
}

families! {
    SPMV_N_WARP = "spmv_n",
    SPMM_N_WARP = "spmm_n",
    SPMM_N_THREAD = "spmm_n_thread",
    SPMM_N_CLASSES = "spmm_n_classes",
    SPMV_N_CLASSES = "spmv_n_classes",
    SPMV_T_GATHER = "spmv_t",
    SPMM_T_GATHER = "spmm_t",
    SPMV_T_GATHER_CSC_COPY = "spmv_t_csc_copy",
    SPMM_T_GATHER_CSC_COPY = "spmm_t_csc_copy",
    SPMV_SCATTER = "spmv_scatter",
    SPMV_SCATTER_AFTER_SCALE = "spmv_scatter_after_scale",
    SPMV_ROW_WARP_SCATTER = "spmv_row_warp_scatter",
    SPMV_LIST_SCATTER_AFTER_SCALE = "spmv_list_scatter_after_scale",
    SPMV_CSC_LIST_SCATTER_AFTER_SCALE = "spmv_csc_list_scatter_after_scale",
    SPMM_SCATTER = "spmm_scatter",
    SPMV_CSC_SCATTER = "spmv_csc_scatter",
    CENSUS = "census",
    SPMV_CSC_EVENTS = "spmv_csc_events",
    SPMV_CSC_PARTS = "spmv_csc_parts",
    SPMV_CSC_PARTS_AFTER_SCALE = "spmv_csc_parts_after_scale",
    SPMV_T_SLICES = "spmv_t_slices",
    SPMV_N_SLICES = "spmv_n_slices",
    LIVE_ROWS = "live_rows",
    SPMM_N_BITS = "spmm_n_bits",
    SPMM_T_BITS = "spmm_t_bits",
    PACK_EVENTS = "pack_events",
    SPMM_N_LISTS = "spmm_n_lists",
    SPMM_T_LISTS = "spmm_t_lists",
    LIST_NONZEROS = "list_nonzeros",
    SCALE = "scale",
    SCALE_OPENER = "scale_opener",
    SCALE_LONG_ROWS = "scale_long_rows",
    YW2Y_N = "yw2y_n",
    YW2Y_N_PLAIN = "yw2y_n_plain",
    YW2Y_T = "yw2y_t",
    YW2Y_T_WINDOWS = "yw2y_t_windows",
    YW2Y_COLUMNS = "yw2y_columns",
    YW2Y_T_BY_COLUMN = "yw2y_t_by_column",
    DENSE_MV_N = "dense_mv_n",
    DENSE_MV_T = "dense_mv_t",
    DENSE_MM_N = "dense_mm_n",
    DENSE_MM_T = "dense_mm_t",
    DENSE_MM_LISTS_N = "dense_mm_lists_n",
    DENSE_MM_LISTS_N_NARROW = "dense_mm_lists_n_narrow",
    DENSE_MM_LISTS_T = "dense_mm_lists_t",
    DENSE_MM_WGMMA = "dense_mm_wgmma",
    DENSE_MM_WGMMA_T = "dense_mm_wgmma_t",
    DENSE_MM_ROWS_T = "dense_mm_rows_t",
    EVENT_MATRIX = "event_matrix",
    LISTED_EVENT_ROWS = "listed_event_rows",
    LIST_EVENTS = "list_events",
    CSR_PRE = "csr_pre",
    CSR_POST = "csr_post",
    CSR_POST_EVEN = "csr_post_even",
    DENSE_PRE = "dense_pre",
    DENSE_POST = "dense_post",
    BSRMM_WGMMA = "bsrmm_wgmma",
    BSRMM_WGMMA_COUNTER = "bsrmm_wgmma_counter",
    BSRMM_WGMMA_COUNTER64 = "bsrmm_wgmma_counter64",
    BSRMM_TILED = "bsrmm_tiled",
    BSRMM_WMMA = "bsrmm_wmma",
    BSRMM_SIMT = "bsrmm_simt",
    COMPACT = "compact",
    COMPACT_ONE_BLOCK = "compact_one_block",
    COMPACT_CLUSTER_ROUNDS = "compact_cluster",
    FILL = "fill",
    NARROW_I64_I32 = "narrow_i64_i32",
}

/// Slot values of a dtype position: 0 is "no dtype", then the dtypes in C enum order.
const SLOTS: usize = 8;
const DTYPES: [DType; 7] = [DType::F16, DType::BF16, DType::F32, DType::F64, DType::Bool, DType::I32, DType::I64];

fn slot(d: Option<DType>) -> usize {
    d.map_or(0, |d| d.raw() as usize)
}

fn index(family: Family, a: Option<DType>, b: Option<DType>) -> usize {
    (family.0 * SLOTS + slot(a)) * SLOTS + slot(b)
}

/// The kernel name of a slot, for messages and for resolving the table.
fn name(family: Family, a: Option<DType>, b: Option<DType>) -> String {
    [Some(NAMES[family.0]), a.map(DType::name), b.map(DType::name)].into_iter().flatten().collect::<Vec<_>>().join("_")
}

/// Every kernel of a loaded module, by (family, dtype, dtype).
pub struct Kernels(Vec<Option<Function>>);

impl Kernels {
    /// A table with no kernels, before the module is loaded.
    pub fn empty() -> Kernels {
        Kernels(Vec::new())
    }

    /// Every kernel of `module`, enumerated and placed in its slot by name.
    ///
    /// # Safety
    /// `module` must be a loaded module whose context is current.
    pub unsafe fn resolve(module: sys::CUmodule) -> Result<Kernels> {
        let choices: Vec<Option<DType>> = std::iter::once(None).chain(DTYPES.map(Some)).collect();
        let mut slots = HashMap::new();
        for family in (0..NAMES.len()).map(Family) {
            for &a in &choices {
                for &b in choices.iter().filter(|b| a.is_some() || b.is_none()) {
                    slots.insert(name(family, a, b), index(family, a, b));
                }
            }
        }
        let mut count = 0;
        call("counting the kernels", || sys::cuModuleGetFunctionCount(&mut count, module))?;
        let mut functions = vec![std::ptr::null_mut(); count as usize];
        call("listing the kernels", || sys::cuModuleEnumerateFunctions(functions.as_mut_ptr(), count, module))?;
        let mut table = vec![None; NAMES.len() * SLOTS * SLOTS];
        for f in functions {
            let mut cname = std::ptr::null();
            call("naming a kernel", || sys::cuFuncGetName(&mut cname, f))?;
            if let Some(&slot) = slots.get(CStr::from_ptr(cname).to_str().unwrap_or_default()) {
                table[slot] = Some(Function(f));
            }
        }
        Ok(Kernels(table))
    }

    /// The kernel of `family` instantiated for dtypes `a` and `b` (`None`: not a parameter).
    pub fn get(&self, family: Family, a: Option<DType>, b: Option<DType>) -> Result<Function> {
        self.0
            .get(index(family, a, b))
            .copied()
            .flatten()
            .ok_or_else(|| Error::internal(format!("kernel {} is not in the module", name(family, a, b))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_instantiation_scheme() {
        assert_eq!(name(SPMM_N_WARP, Some(DType::F32), Some(DType::Bool)), "spmm_n_f32_bool");
        assert_eq!(name(SCALE, Some(DType::BF16), None), "scale_bf16");
        assert_eq!(name(NARROW_I64_I32, None, None), "narrow_i64_i32");
    }

    #[test]
    fn slots_are_distinct() {
        let mut seen = std::collections::HashSet::new();
        for f in (0..NAMES.len()).map(Family) {
            for a in std::iter::once(None).chain(DTYPES.map(Some)) {
                for b in std::iter::once(None).chain(DTYPES.map(Some)) {
                    assert!(seen.insert(index(f, a, b)));
                }
            }
        }
    }

    /// Launches overlap their predecessors (programmatic dependent launch), which is safe only
    /// because every kernel waits for them first: kernels are declared only through the entry
    /// macros of common.cuh, which put that wait first.
    #[test]
    fn every_kernel_is_declared_through_the_waiting_entry_macros() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/kernels");
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let declared = text.matches("__global__").count();
            let allowed = if path.ends_with("common.cuh") { 8 } else { 0 };
            assert_eq!(declared, allowed, "{}: declare kernels with the EVS_*KERNEL macros", path.display());
        }
        let common = std::fs::read_to_string(format!("{dir}/common.cuh")).unwrap();
        assert_eq!(
            common.matches("wait_for_prior_grids();").count(),
            7,
            "the five plain entry macros wait first, enter_after_loads, and the opener's follower before it exits"
        );
        // kernels that load before the wait enter through enter_after_loads: the plain gathers
        let sparse = std::fs::read_to_string(format!("{dir}/sparse.cu")).unwrap();
        assert_eq!(sparse.matches("EVS_KERNEL_LOADS_FIRST(").count(), 2);
        // spmv T and N on a spike list right after the scaling that opens them (spmv_spikes_t/n),
        // T on an event vector (active_lines) and N by line parts (csc_parts)
        assert_eq!(sparse.matches("EVS_KERNEL_AFTER_OPENER(").count(), 4);
        assert_eq!(sparse.matches("let_dependents_launch();").count(), 1);
        // the one kernel that waits where it needs to (its N and T forms) runs right after an
        // opener that lets it launch early (dense_wgmma in src/cuda/ops.rs: event_matrix first
        // for N, listed_event_rows for T)
        let dense = std::fs::read_to_string(format!("{dir}/dense.cu")).unwrap();
        assert_eq!(dense.matches("EVS_MAPS_KERNEL_AFTER_OPENER(").count(), 2);
        assert_eq!(dense.matches("let_dependents_launch();").count(), 2);
    }
}
