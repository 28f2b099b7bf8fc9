//! Statistics of a sparse structure that kernel choice needs: how long its rows and columns
//! are. Computed once per matrix, at analysis, from a host view of the structure.

use super::csr::{CsrView, Index};

/// Buckets of the length histogram: bucket 0 counts empty lines, bucket b > 0 lines of length
/// in [2^(b-1), 2^b).
pub const BUCKETS: usize = 34;

/// The distribution of the lengths of a matrix's rows (or columns).
#[derive(Clone, Debug, PartialEq)]
pub struct LengthStats {
    pub lines: usize,
    pub mean: f64,
    pub max: usize,
    /// Lines per power-of-two length bucket (see `BUCKETS`).
    pub histogram: [u64; BUCKETS],
}

fn bucket(len: usize) -> usize {
    (usize::BITS - len.leading_zeros()) as usize
}

impl LengthStats {
    pub fn from_lengths(lengths: impl Iterator<Item = usize>) -> LengthStats {
        let (mut lines, mut total, mut max, mut histogram) = (0usize, 0usize, 0usize, [0u64; BUCKETS]);
        for len in lengths {
            lines += 1;
            total += len;
            max = max.max(len);
            histogram[bucket(len).min(BUCKETS - 1)] += 1;
        }
        let mean = if lines == 0 { 0.0 } else { total as f64 / lines as f64 };
        LengthStats { lines, mean, max, histogram }
    }

    /// Lines of at least `len` entries, rounded to the histogram's buckets: exact when `len`
    /// is a power of two.
    pub fn at_least(&self, len: usize) -> u64 {
        self.histogram[bucket(len).min(BUCKETS)..].iter().sum()
    }

    /// Smallest power of two that at least fraction `q` of the lines are shorter than (0 when
    /// that many lines are empty).
    pub fn quantile_bound(&self, q: f64) -> usize {
        let want = (q * self.lines as f64).ceil() as u64;
        let mut seen = 0;
        for (b, &count) in self.histogram.iter().enumerate() {
            seen += count;
            if seen >= want {
                return if b == 0 { 0 } else { 1usize << b.min(63) };
            }
        }
        self.max
    }
}

/// Row and column statistics of a CSR matrix.
#[derive(Clone, Debug, PartialEq)]
pub struct CsrStats {
    pub nnz: usize,
    pub rows: LengthStats,
    pub cols: LengthStats,
    /// Every row's column indices are in ascending order (duplicates allowed).
    pub sorted_rows: bool,
}

impl CsrStats {
    pub fn of<P: Index>(view: &CsrView<'_, P>) -> CsrStats {
        let rows = LengthStats::from_lengths((0..view.m).map(|i| view.row(i).len()));
        let mut per_col = vec![0usize; view.k];
        for &c in view.indices {
            per_col[c as usize] += 1;
        }
        let sorted_rows = (0..view.m).all(|i| view.indices[view.row(i)].windows(2).all(|w| w[0] <= w[1]));
        CsrStats { nnz: view.indices.len(), rows, cols: LengthStats::from_lengths(per_col.into_iter()), sorted_rows }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_by_powers_of_two() {
        let s = LengthStats::from_lengths([0, 1, 2, 3, 4, 7, 8, 1000].into_iter());
        assert_eq!((s.lines, s.max), (8, 1000));
        assert_eq!(s.mean, 1025.0 / 8.0);
        assert_eq!(&s.histogram[..5], &[1, 1, 2, 2, 1]);
        assert_eq!(s.histogram[10], 1);
        assert_eq!(s.at_least(8), 2);
        assert_eq!(s.at_least(1), 7);
        assert_eq!(s.quantile_bound(0.5), 4);
        assert_eq!(s.quantile_bound(1.0), 1024);
    }

    #[test]
    fn rows_and_columns_of_a_csr() {
        let (indptr, indices) = ([0i32, 2, 2, 5], [1, 3, 0, 3, 3]);
        let view = CsrView { m: 3, k: 4, indptr: &indptr, indices: &indices };
        let s = CsrStats::of(&view);
        assert_eq!((s.nnz, s.rows.max, s.cols.max), (5, 3, 3));
        assert_eq!(s.cols.histogram[0], 1); // column 2 is empty
        assert!(s.sorted_rows);
    }

    #[test]
    fn sorted_rows_allow_duplicates_and_not_descents() {
        let stats = |indices: &[i32]| {
            let indptr = [0i32, 2, indices.len() as i32];
            CsrStats::of(&CsrView { m: 2, k: 4, indptr: &indptr, indices }).sorted_rows
        };
        assert!(stats(&[1, 3, 0, 3, 3]));
        assert!(!stats(&[3, 1, 0, 3, 3]));
        assert!(stats(&[3, 3, 0, 1]));
    }
}
