// What the TMA probes (bench/probe_bsr_wgmma.cu, bench/probe_l2_feed.cu) share: a 2-D tensor map
// over a row-major bf16 array, 128-byte swizzled boxes, through the driver (link with -lcuda).
#pragma once

#include <cuda.h>

#include <cstdio>
#include <cstdlib>

inline CUtensorMap tensor_map(const void* base, uint64_t cols, uint64_t rows, uint64_t row_bytes, uint32_t box_cols,
                              uint32_t box_rows) {
    CUtensorMap map;
    cuuint64_t dims[2] = {cols, rows}, strides[1] = {row_bytes};
    cuuint32_t box[2] = {box_cols, box_rows}, unit[2] = {1, 1};
    CUresult r = cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, (void*)base, dims, strides, box, unit,
                                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) printf("cuTensorMapEncodeTiled: %d\n", (int)r), exit(1);
    return map;
}
