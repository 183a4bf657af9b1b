//===- ToolDiagnostics.cpp - diagnostics as the tools print them -*- C++
//-*-===//
#include "distopt/Driver/ToolDiagnostics.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace mlir;
using namespace distopt;

ToolDiagnostics::ToolDiagnostics(MLIRContext &ctx, StringRef tool, bool debug,
                                 llvm::raw_ostream &os)
    : ctx(ctx), tool(tool.str()), os(os) {
  ctx.printOpOnDiagnostic(debug);
  ctx.printStackTraceOnDiagnostic(false);
  handler = ctx.getDiagEngine().registerHandler([this](Diagnostic &diag) {
    print(diag, /*isNote=*/false);
    for (Diagnostic &note : diag.getNotes())
      print(note, /*isNote=*/true);
    return success();
  });
}

ToolDiagnostics::~ToolDiagnostics() {
  ctx.getDiagEngine().eraseHandler(handler);
}

namespace {

/// What a location says to a user.
struct Where {
  FileLineColLoc file; // with a line: show it
  std::string text;    // "model.onnx: node '/blocks.0/MatMul'", ...
};

Where describe(Location loc, StringRef tool) {
  Where w;
  std::string node, fileName;
  loc->walk([&](Location l) {
    if (auto name = dyn_cast<NameLoc>(l); name && node.empty())
      node = name.getName().str();
    if (auto f = dyn_cast<FileLineColLoc>(l); f && !w.file) {
      fileName = f.getFilename().str();
      if (f.getLine() > 0)
        w.file = f;
    }
    return WalkResult::advance();
  });
  if (w.file)
    return w;
  if (!fileName.empty())
    w.text = fileName + (node.empty() ? "" : ": node '" + node + "'");
  else if (!node.empty())
    w.text = "node '" + node + "'";
  else
    w.text = tool.str();
  return w;
}

llvm::SourceMgr::DiagKind kindOf(DiagnosticSeverity s) {
  switch (s) {
  case DiagnosticSeverity::Error:
    return llvm::SourceMgr::DK_Error;
  case DiagnosticSeverity::Warning:
    return llvm::SourceMgr::DK_Warning;
  case DiagnosticSeverity::Note:
    return llvm::SourceMgr::DK_Note;
  case DiagnosticSeverity::Remark:
    return llvm::SourceMgr::DK_Remark;
  }
  return llvm::SourceMgr::DK_Error;
}

} // namespace

void ToolDiagnostics::print(Diagnostic &diag, bool isNote) {
  DiagnosticSeverity severity =
      isNote ? DiagnosticSeverity::Note : diag.getSeverity();
  if (severity == DiagnosticSeverity::Error)
    ++errors;
  std::string message = diag.str();
  Where where = describe(diag.getLocation(), tool);
  if (where.file) {
    // A file with lines (a plan): the line itself, with a caret.
    StringRef name = where.file.getFilename();
    auto it = bufferOf.find(name);
    if (it == bufferOf.end()) {
      unsigned id = 0;
      if (auto buffer = llvm::MemoryBuffer::getFile(name))
        id = sources.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
      it = bufferOf.try_emplace(name, id).first;
    }
    if (it->second != 0) {
      unsigned line = where.file.getLine(), col = where.file.getColumn();
      if (line <=
          sources.getMemoryBuffer(it->second)->getBuffer().count('\n') + 1) {
        llvm::SMLoc at =
            sources.FindLocForLineAndColumn(it->second, line, col ? col : 1);
        if (at.isValid()) {
          sources.PrintMessage(os, at, kindOf(severity), message);
          return;
        }
      }
    }
    os << name << ":" << where.file.getLine() << ":" << where.file.getColumn()
       << ": ";
  } else {
    os << where.text << ": ";
  }
  switch (severity) {
  case DiagnosticSeverity::Error:
    os << "error: ";
    break;
  case DiagnosticSeverity::Warning:
    os << "warning: ";
    break;
  case DiagnosticSeverity::Note:
    os << "note: ";
    break;
  case DiagnosticSeverity::Remark:
    os << "remark: ";
    break;
  }
  os << message << "\n";
}
