# shellcheck shell=bash
# Sourced by scripts/gpu_check.sh and scripts/multi_gpu_check.sh: what every process on a GPU
# machine needs. NVLink multicast stays off (the machines' GPUs are shared, and a program that
# uses it can put them out of service; issue #25), and nccl_lib_dir finds a libnccl.so.2 for the
# binaries, which all link it (218 MB, so not packed).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

# The directory of a libnccl.so.2 to load: ours if packed under ROOT/gpu/lib, else the machine's
# (PyTorch's nvidia-nccl wheel, or a system copy).
nccl_lib_dir() {
  local root=$1 d
  for d in "$root/gpu/lib" \
           "$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null || true)" \
           /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/lib/x86_64-linux-gnu; do
    if [ -n "$d" ] && [ -e "$d/libnccl.so.2" ]; then echo "$d"; return 0; fi
  done
  d=$(find / -xdev -name 'libnccl.so.2' -not -path '*/proc/*' 2>/dev/null | head -n 1 || true)
  [ -n "$d" ] && dirname "$d"
}
