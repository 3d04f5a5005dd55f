/* hd.h — TKP_HD marks a function compiled for both the host and the device, so the CPU and
 * the CUDA implementation of a module share one definition (and agree bit for bit). */
#ifndef TKP_HD_H
#define TKP_HD_H

#ifdef __CUDACC__
#define TKP_HD __host__ __device__ __forceinline__
#else
#define TKP_HD static inline
#endif

#endif
