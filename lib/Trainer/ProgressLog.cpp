//===- ProgressLog.cpp - what a training run shows per step ---------------===//
#include "distopt/Trainer/ProgressLog.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"

#include <chrono>
#include <cmath>

using namespace distopt;

static double nowSeconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string distopt::formatDuration(double seconds) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (seconds < 60) {
    os << llvm::format("%.1f s", seconds);
    return s;
  }
  int64_t whole = static_cast<int64_t>(std::llround(seconds));
  if (whole < 3600)
    os << whole / 60 << " min " << llvm::format("%02d", int(whole % 60))
       << " s";
  else
    os << whole / 3600 << " h " << llvm::format("%02d", int(whole / 60 % 60))
       << " min";
  return s;
}

llvm::Expected<std::unique_ptr<ProgressLog>>
ProgressLog::create(int64_t total, llvm::StringRef rateUnit,
                    llvm::StringRef logFile, bool append) {
  std::unique_ptr<ProgressLog> log(new ProgressLog());
  log->total = total;
  log->unit = rateUnit.str();
  log->startedAt = nowSeconds();
  if (!logFile.empty()) {
    std::error_code ec;
    log->file = std::make_unique<llvm::raw_fd_ostream>(
        logFile, ec,
        append ? llvm::sys::fs::OF_Append | llvm::sys::fs::OF_Text
               : llvm::sys::fs::OF_Text);
    if (ec)
      return llvm::createStringError("cannot write the log file " + logFile +
                                     ": " + ec.message());
  }
  return log;
}

double ProgressLog::elapsedSeconds() const { return nowSeconds() - startedAt; }

void ProgressLog::record(llvm::json::Object fields) {
  if (!file)
    return;
  // One line per record, flushed: a plot or a tracker may read it live.
  *file << llvm::json::Value(std::move(fields)) << "\n";
  file->flush();
}

std::string ProgressLog::step(const StepResult &r) {
  ++done;
  stepSeconds += r.ms / 1e3;
  double elapsed = elapsedSeconds();
  // The time left from the mean step so far (the first step's compile of
  // kernels and prepacking weigh in: an estimate, like every trainer's).
  double left = stepSeconds / done * static_cast<double>(total - r.step - 1);
  double rate = r.tokens / std::max(r.ms, 1e-9) * 1e3;
  std::string line;
  llvm::raw_string_ostream os(line);
  // Steps count from 1 here, as checkpoints do ("saved at step K" after K).
  os << "step " << r.step + 1 << "/" << total << ": loss "
     << llvm::format("%.7g", r.loss);
  if (r.droppedTokens)
    os << " dropped tokens "
       << llvm::format("%.1f", 100.0 * *r.droppedTokens) << "%";
  os << " lr " << llvm::format("%.4g", r.lr)
     << " grad_norm " << llvm::format("%.5g", r.gradNorm) << " ms "
     << llvm::format("%.1f", r.ms) << " " << unit << "/s "
     << llvm::format("%.0f", rate) << " elapsed " << formatDuration(elapsed)
     << " eta " << formatDuration(left);
  llvm::json::Object fields{{"step", r.step + 1},
                            {"steps", total},
                            {"loss", r.loss},
                            {"lr", r.lr},
                            {"grad_norm", r.gradNorm},
                            {"ms", r.ms},
                            {unit + "_per_s", rate},
                            {"elapsed_s", elapsed}};
  if (r.droppedTokens)
    fields["dropped_tokens"] = *r.droppedTokens;
  if (r.lossScaled) {
    os << " loss_scale " << llvm::format("%g", r.lossScale);
    if (r.skipped)
      os << " skipped: gradients not finite, nothing updated; loss_scale now "
         << llvm::format("%g", r.nextLossScale);
    fields["loss_scale"] = r.lossScale;
    fields["skipped"] = r.skipped;
  }
  record(std::move(fields));
  return line;
}

std::string ProgressLog::evaluation(int64_t stepsDone, double loss,
                                    int64_t tokens, double ms) {
  std::string line;
  llvm::raw_string_ostream os(line);
  os << "eval after step " << stepsDone << "/" << total << ": loss "
     << llvm::format("%.7g", loss) << " over " << tokens << " tokens ms "
     << llvm::format("%.1f", ms);
  record(llvm::json::Object{{"step", stepsDone},
                            {"steps", total},
                            {"eval_loss", loss},
                            {"eval_tokens", tokens},
                            {"ms", ms},
                            {"elapsed_s", elapsedSeconds()}});
  return line;
}
