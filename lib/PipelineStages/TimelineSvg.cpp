//===- TimelineSvg.cpp - a pipeline timeline as a picture -------*- C++ -*-===//
#include "distopt/PipelineStages/TimelineSvg.h"

#include "llvm/Support/FormatVariadic.h"

using namespace distopt;
using llvm::raw_ostream;
using llvm::StringRef;

void distopt::writeTimelineSvg(const ScheduleTimeline &tl, int64_t numStages,
                               int64_t microbatches, StringRef title,
                               raw_ostream &os) {
  auto num = [](double v) { return llvm::formatv("{0:f1}", v).str(); };
  const double width = 900, rowHeight = 36, left = 80, top = 40;
  double scale = tl.makespan > 0 ? (width - left - 20) / tl.makespan : 1;
  double height = top + numStages * rowHeight + 50;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(width)
     << "\" height=\"" << num(height)
     << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  os << "<text x=\"" << num(left) << "\" y=\"20\" font-size=\"14\">" << title
     << "</text>\n";
  for (int64_t s = 0; s < numStages; ++s)
    os << "<text x=\"10\" y=\"" << num(top + s * rowHeight + rowHeight / 2 + 4)
       << "\">stage " << s << "</text>\n";
  for (const auto &slot : tl.slots) {
    const char *letter = slot.pass == Pass::Forward    ? "F"
                         : slot.pass == Pass::Backward ? "B"
                                                       : "W";
    const char *what = slot.pass == Pass::Forward    ? " forward"
                       : slot.pass == Pass::Backward ? " backward"
                                                     : " weight gradients";
    double lightness = slot.pass == Pass::Forward    ? 60
                       : slot.pass == Pass::Backward ? 35
                                                     : 80;
    double hue = microbatches > 0 ? 360.0 * slot.microbatch / microbatches : 0;
    double x = left + slot.start * scale, w = (slot.end - slot.start) * scale;
    double y = top + slot.stage * rowHeight + 4;
    os << "<rect x=\"" << num(x) << "\" y=\"" << num(y) << "\" width=\""
       << num(w) << "\" height=\"" << num(rowHeight - 8) << "\" fill=\"hsl("
       << num(hue) << ",70%," << num(lightness) << "%)"
       << "\" stroke=\"#333\"><title>stage " << slot.stage << ", microbatch "
       << slot.microbatch << what
       << (slot.chunk ? ", chunk " + std::to_string(slot.chunk) : "") << ", "
       << num(slot.start) << ".." << num(slot.end) << " us</title></rect>\n";
    os << "<text x=\"" << num(x + w / 2 - 8) << "\" y=\""
       << num(y + rowHeight / 2) << "\">" << letter << slot.microbatch
       << "</text>\n";
  }
  os << "<text x=\"" << num(left) << "\" y=\"" << num(height - 15)
     << "\">time across (makespan " << num(tl.makespan) << " us), bubble "
     << num(tl.bubbleFraction * 100)
     << "%, colour = microbatch</text>\n</svg>\n";
}
