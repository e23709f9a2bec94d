// SGL_HOST_DEVICE: marks plain functions that both host code and CUDA kernels call.
#pragma once

#ifdef __CUDACC__
#define SGL_HOST_DEVICE __host__ __device__
#else
#define SGL_HOST_DEVICE
#endif
