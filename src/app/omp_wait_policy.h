// OpenMP's wait policy for the serving process.
#pragma once

namespace sgl::app {

// Makes OMP_WAIT_POLICY default to "passive" (an explicit setting is kept). libgomp reads the
// variable once, when it loads, before main runs: so this sets it and re-executes the process
// (/proc/self/exe, same argv); if that fails the process goes on with libgomp's default. Active
// spin-waiting workers starve a server's own I/O and engine threads and any co-tenant: on the
// 2-core dev VM a request burst ran several times faster passive
// (docs/perf-log/serving-load-test-cpu.md).
void default_omp_wait_policy_to_passive(char** argv);

}  // namespace sgl::app
