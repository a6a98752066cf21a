#include "coord/wire.h"

#include <nlohmann/json.hpp>

#include "util/json.h"

namespace coldstart::coord {

std::string encode_frame_text(std::string_view body) {
  auto n = static_cast<uint32_t>(body.size());
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i) out[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  out += body;
  return out;
}

std::string encode_frame(const nlohmann::json& msg) { return encode_frame_text(dump_json(msg)); }

FrameReader::Status FrameReader::next(std::string* payload, std::string* err) {
  if (buf_.size() - pos_ < 4) return Status::need_more;
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i)
    n |= static_cast<uint32_t>(static_cast<unsigned char>(buf_[pos_ + static_cast<size_t>(i)])) << (8 * i);
  if (n == 0 || n > kMaxFrame) {
    *err = "frame of " + std::to_string(n) + " bytes (limit " + std::to_string(kMaxFrame) + ")";
    return Status::error;
  }
  if (buf_.size() - pos_ - 4 < n) return Status::need_more;
  payload->assign(buf_, pos_ + 4, n);
  pos_ += 4 + n;
  if (pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  } else if (pos_ > 65536) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  return Status::frame;
}

bool parse_message(std::string_view payload, nlohmann::json* out, std::string* err) {
  *out = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (out->is_discarded()) {
    *err = "message is not JSON";
    return false;
  }
  if (!out->is_object() || !out->contains("t") || !(*out)["t"].is_string()) {
    *err = "message has no type";
    return false;
  }
  return true;
}

}  // namespace coldstart::coord
