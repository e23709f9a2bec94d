// JSONL batch files.
#include "app/batch_file.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

namespace sgl::app {
namespace {

using nlohmann::json;

Status parse_job(const json& j, GenerationJob* job) {
  if (!j.is_object()) return invalid_argument("expected a JSON object");
  static const std::set<std::string> known = {
      "prompt", "prompt_ids", "max_new_tokens", "temperature", "top_k",          "top_p",
      "min_p",  "seed",       "ignore_eos",     "stop",        "stop_token_ids", "top_logprobs"};
  for (const auto& [key, value] : j.items()) {
    if (!known.count(key)) return invalid_argument("unknown field '" + key + "'");
  }
  if (j.contains("prompt") == j.contains("prompt_ids")) {
    return invalid_argument("give exactly one of prompt and prompt_ids");
  }
  try {
    engine::GenerateRequest& r = job->request;
    if (j.contains("prompt")) job->prompt = j.at("prompt").get<std::string>();
    if (j.contains("prompt_ids")) r.input_ids = j.at("prompt_ids").get<std::vector<int32_t>>();
    r.max_new_tokens = j.value("max_new_tokens", 128);
    r.sampling.temperature = j.value("temperature", 1.0f);
    r.sampling.top_k = j.value("top_k", -1);
    r.sampling.top_p = j.value("top_p", 1.0f);
    r.sampling.min_p = j.value("min_p", 0.0f);
    if (j.contains("seed")) r.sampling.seed = j.at("seed").get<uint64_t>();
    r.ignore_eos = j.value("ignore_eos", false);
    if (j.contains("stop_token_ids")) {
      r.stop_token_ids = j.at("stop_token_ids").get<std::vector<int32_t>>();
    }
    r.top_logprobs_num = j.value("top_logprobs", 0);
    r.return_logprob = r.top_logprobs_num > 0;
    if (j.contains("stop")) {
      const json& stop = j.at("stop");
      if (stop.is_string()) {
        job->stop = {stop.get<std::string>()};
      } else {
        job->stop = stop.get<std::vector<std::string>>();
      }
    }
  } catch (const json::exception& e) {
    return invalid_argument(std::string("bad field type: ") + e.what());
  }
  return Status::ok_status();
}

}  // namespace

Result<std::vector<GenerationJob>> read_batch_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return not_found("cannot open batch file " + path.string());
  std::vector<GenerationJob> jobs;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
      return invalid_argument(path.string() + ":" + std::to_string(number) + ": invalid JSON");
    }
    GenerationJob job;
    SGL_RETURN_IF_ERROR(
        parse_job(j, &job).with_context(path.string() + ":" + std::to_string(number)));
    jobs.push_back(std::move(job));
  }
  if (jobs.empty()) return invalid_argument(path.string() + ": no requests");
  return jobs;
}

}  // namespace sgl::app
