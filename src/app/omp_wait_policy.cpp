// default_omp_wait_policy_to_passive: set the variable, re-execute once.
#include "app/omp_wait_policy.h"

#include <unistd.h>

#include <cstdlib>

namespace sgl::app {

void default_omp_wait_policy_to_passive(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;  // explicit, or already re-executed
  if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
  execv("/proc/self/exe", argv);  // returns only on failure
}

}  // namespace sgl::app
