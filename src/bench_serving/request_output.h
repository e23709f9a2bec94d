// RequestOutput: what one benchmark request measured (SGLang's RequestFuncOutput).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sgl::bench_serving {

struct RequestOutput {
  bool success = false;
  std::string error;          // why it failed (empty on success)
  double start_s = 0;         // when it was sent, in seconds from the benchmark's start
  double ttft_s = 0;          // time to the first chunk with text
  double latency_s = 0;       // end to end: sent -> response complete
  std::vector<double> itl_s;  // gaps between text chunks (/generate: per token)
  int64_t prompt_len = 0;     // the server's prompt_tokens, else the dataset's length
  int64_t output_len = 0;     // the server's completion_tokens, else text chunks counted
  std::string generated_text;
};

}  // namespace sgl::bench_serving
