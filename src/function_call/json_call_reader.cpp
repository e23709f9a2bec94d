// JsonCallReader.
#include "function_call/json_call_reader.h"

#include <nlohmann/json.hpp>

#include "function_call/text_scan.h"

namespace sgl::function_call {

JsonCallReader::Step JsonCallReader::start_value(char c, EventSink& out) {
  if (is_json_space(c)) return Step::kMore;
  in_value_ = true;
  value_.reset();
  if (field_ == Field::kName) {
    if (c != '"' || have_name_) return Step::kError;
    name_json_.clear();
  } else if (field_ == Field::kArguments && have_args_) {
    return Step::kError;  // two argument fields
  }
  return value_byte(c, out);
}

JsonCallReader::Step JsonCallReader::value_byte(char c, EventSink& out) {
  const JsonScanner::Step s = value_.step(c);
  if (s == JsonScanner::Step::kError) return Step::kError;
  if (s != JsonScanner::Step::kCompleteBefore) {
    if (field_ == Field::kName) {
      name_json_ += c;
    } else if (field_ == Field::kArguments) {
      if (begun_) {
        out.arguments(std::string_view(&c, 1));
      } else {
        args_before_name_ += c;
      }
    }
  }
  if (s == JsonScanner::Step::kMore) return Step::kMore;
  const Step done = value_done(out);
  if (done != Step::kMore || s == JsonScanner::Step::kComplete) return done;
  return step(c, out);  // a bare number ended at this byte: the byte follows the value
}

JsonCallReader::Step JsonCallReader::value_done(EventSink& out) {
  in_value_ = false;
  state_ = State::kCommaOrEnd;
  if (field_ == Field::kName) {
    const auto parsed = nlohmann::json::parse(name_json_, nullptr, false);
    if (!parsed.is_string() || parsed.get_ref<const std::string&>().empty()) return Step::kError;
    name_ = parsed.get<std::string>();
    if (!allows(name_)) {
      refused_name_ = true;
      return Step::kError;
    }
    have_name_ = true;
    begun_ = true;
    out.begin_call(name_);
    out.arguments(args_before_name_);
  } else if (field_ == Field::kArguments) {
    have_args_ = true;
  }
  return Step::kMore;
}

JsonCallReader::Step JsonCallReader::step(char c, EventSink& out) {
  if (in_value_) return value_byte(c, out);
  switch (state_) {
    case State::kOpen:
      if (c != '{') return Step::kError;
      state_ = State::kKeyOrEnd;
      return Step::kMore;
    case State::kKeyOrEnd:
    case State::kKey:
      if (is_json_space(c)) return Step::kMore;
      if (c == '}' && state_ == State::kKeyOrEnd) return Step::kError;  // {}: no name
      if (c != '"') return Step::kError;
      key_.clear();
      key_escape_ = false;
      state_ = State::kKeyText;
      return Step::kMore;
    case State::kKeyText:
      if (key_escape_) {
        key_escape_ = false;
      } else if (c == '\\') {
        key_escape_ = true;
      } else if (c == '"') {
        field_ = key_ == "name"                                ? Field::kName
                 : key_ == "arguments" || key_ == "parameters" ? Field::kArguments
                                                               : Field::kOther;
        state_ = State::kColon;
        return Step::kMore;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        return Step::kError;
      }
      key_ += c;
      return key_.size() > 256 ? Step::kError : Step::kMore;
    case State::kColon:
      if (is_json_space(c)) return Step::kMore;
      if (c != ':') return Step::kError;
      state_ = State::kValue;
      return Step::kMore;
    case State::kValue:
      return start_value(c, out);
    case State::kCommaOrEnd:
      if (is_json_space(c)) return Step::kMore;
      if (c == ',') {
        state_ = State::kKey;
        return Step::kMore;
      }
      if (c != '}' || !have_name_) return Step::kError;
      if (!have_args_) out.arguments("{}");
      return Step::kDone;
  }
  return Step::kError;
}

}  // namespace sgl::function_call
