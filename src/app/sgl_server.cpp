// sgl-server: the OpenAI-compatible HTTP server (flags, model loading; the rest is server/).
#include <cstdio>
#include <iostream>

#include "app/cli_args.h"
#include "app/engine_flags.h"
#include "app/omp_wait_policy.h"
#include "engine/model_engine.h"
#include "model/model_source.h"
#include "server/serve.h"
#include "tokenizer/tokenizer.h"

namespace sgl::app {
namespace {

constexpr const char* kUsage =
    R"(usage: sgl-server --model-path DIR [--host 127.0.0.1] [--port 30000]
  [--served-model-name NAME] [--api-key KEY] [--chat-template FILE]
  [--http-threads N=4] [--http-read-timeout SECONDS=30] [--drain-timeout SECONDS=10]
)";

struct Options {
  server::ServeOptions serve;
  EngineSetup setup;
};

Result<Options> parse_options(int argc, char** argv) {
  std::set<std::string> values = {
      "--model-path",   "--host",          "--port",         "--served-model-name",
      "--api-key",      "--chat-template", "--http-threads", "--http-read-timeout",
      "--drain-timeout"};
  std::set<std::string> switches = {"--help"};
  values.insert(engine_value_flags().begin(), engine_value_flags().end());
  switches.insert(engine_switch_flags().begin(), engine_switch_flags().end());
  SGL_ASSIGN_OR_RETURN(CliArgs args, CliArgs::parse(argc, argv, values, switches));
  if (args.has("--help")) return invalid_argument("");
  Options options;
  server::ServeOptions& o = options.serve;
  if (!args.get("--model-path")) return invalid_argument("--model-path is required");
  o.model_path = *args.get("--model-path");
  o.host = args.get("--host").value_or("127.0.0.1");
  SGL_ASSIGN_OR_RETURN(int64_t port, args.get_int("--port", 30000));
  if (port < 0 || port > 65535) return invalid_argument("--port must be in [0, 65535]");
  o.port = static_cast<int>(port);
  o.served_model_name = args.get("--served-model-name").value_or("");
  o.api_key = args.get("--api-key").value_or("");
  o.chat_template_path = args.get("--chat-template").value_or("");
  SGL_ASSIGN_OR_RETURN(int64_t threads, args.get_int("--http-threads", 4));
  SGL_ASSIGN_OR_RETURN(double read_timeout, args.get_double("--http-read-timeout", 30));
  SGL_ASSIGN_OR_RETURN(double drain_timeout, args.get_double("--drain-timeout", 10));
  if (threads < 1 || threads > 256) return invalid_argument("--http-threads must be in [1, 256]");
  if (!(read_timeout > 0) || !(drain_timeout >= 0)) {
    return invalid_argument("--http-read-timeout must be > 0 and --drain-timeout >= 0");
  }
  o.http_threads = static_cast<int>(threads);
  o.http_read_timeout = std::chrono::milliseconds(static_cast<int64_t>(read_timeout * 1000));
  o.drain_timeout = std::chrono::milliseconds(static_cast<int64_t>(drain_timeout * 1000));
  SGL_ASSIGN_OR_RETURN(options.setup, parse_engine_flags(args));
  o.engine = options.setup.engine;
  o.device = args.get("--device").value_or("cpu");
  return options;
}

int run(int argc, char** argv) {
  // Before any thread starts, so that every thread inherits the mask and serve() gets them.
  server::block_termination_signals();
  auto parsed = parse_options(argc, argv);
  if (!parsed.ok()) {
    if (!parsed.status().message().empty()) {
      std::cerr << "sgl-server: " << parsed.status().message() << "\n";
    }
    std::cerr << kUsage << engine_flags_usage();
    return 2;
  }
  const server::ServeOptions& o = parsed->serve;
  const EngineSetup& setup = parsed->setup;
  auto fail = [](const Status& s) {
    std::cerr << "sgl-server: " << s.to_string() << "\n";
    return 1;
  };
  // First, so that a bad path reads as one (not as a missing tokenizer).
  if (auto format = model::check_model_path(o.model_path); !format.ok()) {
    return fail(format.status());
  }
  auto tok = tokenizer::Tokenizer::from_dir(o.model_path);
  if (!tok.ok()) return fail(tok.status());
  auto me = engine::launch_model_engine(o.model_path, setup.runner, setup.engine,
                                        (*tok)->eos_token_ids());
  if (!me.ok()) return fail(me.status());
  Status status = server::serve(o, *me, **tok, [](const std::string& url) {
    std::printf("sgl-server listening on %s\n", url.c_str());
    std::fflush(stdout);
  });
  if (!status.ok()) return fail(status);
  return 0;
}

}  // namespace
}  // namespace sgl::app

int main(int argc, char** argv) {
  sgl::app::default_omp_wait_policy_to_passive(argv);
  return sgl::app::run(argc, argv);
}
