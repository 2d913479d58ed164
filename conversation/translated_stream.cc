// A Chat Completions stream written as the call's front's stream (see translated_stream.h).
#include "conversation/translated_stream.h"

namespace switchyard::conversation::translate {

std::string TranslatedStream::Start() {
  if (started_) return "";
  started_ = true;
  return reply_->StreamStart();
}

std::string TranslatedStream::Fail(const Status& st) {
  if (failed_) return "";
  failed_ = true;
  return Start() + reply_->StreamError(st);
}

std::string TranslatedStream::Feed(std::string_view bytes) {
  if (failed_) return "";
  std::string out = Start();
  std::string text = reader_.Feed(bytes);
  if (!text.empty()) out += reply_->StreamText(text);
  if (!reader_.error().ok()) out += Fail(reader_.error());
  return out;
}

std::string TranslatedStream::End(bool complete) {
  if (failed_) {
    end_ = reader_.error().ok() ? Status::Aborted("the stream failed") : reader_.error();
    return "";
  }
  std::string out = Start();
  std::string text = reader_.Finish();
  if (!text.empty()) out += reply_->StreamText(text);
  if (!reader_.error().ok()) {
    end_ = reader_.error();
  } else if (!complete || !reader_.whole()) {
    end_ = Status::Unavailable(
        "the upstream's stream ended before its answer did (no finish_reason, no [DONE])");
  }
  if (!end_.ok()) out += Fail(end_);
  return out;
}

Result<Answer> TranslatedStream::answer() const {
  if (!end_.ok()) return end_;
  return reader_.answer();
}

}  // namespace switchyard::conversation::translate
