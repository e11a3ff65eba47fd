// toolchain.cu: what built this program, recorded in every results row
// beside the code hash: the compiler, the CCCL (CUB) version and the GPU
// architectures the binary carries machine code for. Each can move a timing.
#include <cub/version.cuh>   // CUB_VERSION: CCCL's version since CCCL 2.0 (CUDA 12.0)

#define STR2(...) #__VA_ARGS__
#define STR(...) STR2(__VA_ARGS__)

extern "C" const int reduce_build_versions[4] = {
    __CUDACC_VER_MAJOR__, __CUDACC_VER_MINOR__, __CUDACC_VER_BUILD__, CUB_VERSION};
// "750,800,900": every architecture this translation unit was compiled for.
extern "C" const char reduce_arch_list[] = STR(__CUDA_ARCH_LIST__);
