// The coordinator's wire format: each message is a 4-byte little-endian length followed by that many bytes of JSON
// (an object with a "t" field naming the message). Frames above kMaxFrame are refused.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace coldstart::coord {

constexpr int kProtocolVersion = 1;
constexpr uint32_t kMaxFrame = 1u << 20;

std::string encode_frame(const nlohmann::json& msg);
// Frames JSON text that the caller already wrote (the worker's hot path formats its phase events directly).
std::string encode_frame_text(std::string_view json_text);

// Accumulates bytes from a stream and yields whole frames.
class FrameReader {
 public:
  enum class Status { need_more, frame, error };
  void feed(const char* data, size_t n) { buf_.append(data, n); }
  // On `frame`, *payload holds the message text; on `error`, *err says why (the stream is then unusable).
  Status next(std::string* payload, std::string* err);
  bool has_partial() const { return !buf_.empty(); }
  size_t buffered() const { return buf_.size() - pos_; }

 private:
  std::string buf_;
  size_t pos_ = 0;
};

// Parses a payload into a JSON object with a string "t"; on failure returns false and says why.
bool parse_message(std::string_view payload, nlohmann::json* out, std::string* err);

}  // namespace coldstart::coord
