#include "engine/chrome_trace.h"

#include <zlib.h>

#include <cstdio>

#include "core/json_string.h"

namespace sgl::engine {
namespace {

constexpr int kPid = 1;

void append_microseconds(std::string& out, double us) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", us);
  out += text;
}

void append_args(std::string& out, const std::vector<TraceArg>& args) {
  out += "\"args\":{";
  for (size_t i = 0; i < args.size(); ++i) {
    if (i > 0) out += ',';
    append_json_string(out, args[i].name);
    out += ':';
    if (!args[i].is_text) {
      out += std::to_string(args[i].number);
    } else {
      append_json_string(out, args[i].text);
    }
  }
  out += '}';
}

}  // namespace

ChromeTrace::ChromeTrace(std::string process_name, std::vector<std::string> track_names) {
  begin_event();
  body_ += "{\"ph\":\"M\",\"pid\":" + std::to_string(kPid) + ",\"name\":\"process_name\",";
  append_args(body_, {{"name", std::move(process_name)}});
  body_ += '}';
  for (size_t i = 0; i < track_names.size(); ++i) {
    begin_event();
    body_ += "{\"ph\":\"M\",\"pid\":" + std::to_string(kPid) + ",\"tid\":" + std::to_string(i + 1) +
             ",\"name\":\"thread_name\",";
    append_args(body_, {{"name", std::move(track_names[i])}});
    body_ += '}';
  }
}

void ChromeTrace::begin_event() {
  if (!body_.empty()) body_ += ",\n";
  ++events_;
}

void ChromeTrace::add_span(int track, std::string_view name, double begin_us, double end_us,
                           const std::vector<TraceArg>& args) {
  begin_event();
  body_ += "{\"ph\":\"X\",\"pid\":" + std::to_string(kPid) +
           ",\"tid\":" + std::to_string(track + 1) + ",\"name\":";
  append_json_string(body_, name);
  body_ += ",\"ts\":";
  append_microseconds(body_, begin_us);
  body_ += ",\"dur\":";
  append_microseconds(body_, end_us > begin_us ? end_us - begin_us : 0.0);
  body_ += ',';
  append_args(body_, args);
  body_ += '}';
}

void ChromeTrace::add_counter(std::string_view name, double at_us,
                              const std::vector<TraceArg>& series) {
  begin_event();
  body_ += "{\"ph\":\"C\",\"pid\":" + std::to_string(kPid) + ",\"name\":";
  append_json_string(body_, name);
  body_ += ",\"ts\":";
  append_microseconds(body_, at_us);
  body_ += ',';
  append_args(body_, series);
  body_ += '}';
}

std::string ChromeTrace::json() const {
  return "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n" + body_ + "\n]}\n";
}

Status ChromeTrace::write_gzip(const std::string& path) const {
  gzFile file = gzopen(path.c_str(), "wb");
  if (file == nullptr) return invalid_argument("cannot create the trace file " + path);
  const std::string text = json();
  const int written = gzwrite(file, text.data(), static_cast<unsigned>(text.size()));
  const int closed = gzclose(file);
  if (written != static_cast<int>(text.size()) || closed != Z_OK) {
    return internal_error("cannot write the trace file " + path);
  }
  return {};
}

}  // namespace sgl::engine
