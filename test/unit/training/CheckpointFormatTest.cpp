//===- CheckpointFormatTest.cpp - checkpoint pieces and files -------------===//
//
// The box arithmetic that copies the part of a saved piece a rank needs
// (against element-by-element indexing over random boxes), and the
// round trips of the safetensors header and index.json writers through
// their parsers.
//
//===----------------------------------------------------------------------===//
#include "distopt/Checkpoint/CheckpointFormat.h"

#include <gtest/gtest.h>

#include <random>

using namespace distopt::checkpoint;

namespace {

/// Row-major index of `at` in `shape`.
int64_t linear(const std::vector<int64_t> &at,
               const std::vector<int64_t> &shape) {
  int64_t i = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    i = i * shape[d] + at[d];
  return i;
}

TEST(CheckpointFormat, CopyOverlapMatchesElementwiseCopy) {
  std::mt19937_64 rng(14);
  auto pick = [&](int64_t n) { return static_cast<int64_t>(rng() % n); };
  for (int trial = 0; trial < 3000; ++trial) {
    size_t rank = pick(5); // 0..4 dimensions
    std::vector<int64_t> global(rank);
    for (int64_t &g : global)
      g = 1 + pick(6);
    auto box = [&](std::vector<int64_t> &off, std::vector<int64_t> &shape) {
      off.resize(rank);
      shape.resize(rank);
      for (size_t d = 0; d < rank; ++d) {
        off[d] = pick(global[d]);
        shape[d] = 1 + pick(global[d] - off[d]);
      }
    };
    std::vector<int64_t> so, ss, dOff, ds;
    box(so, ss);
    box(dOff, ds);
    int64_t sn = 1, dn = 1;
    for (size_t d = 0; d < rank; ++d) {
      sn *= ss[d];
      dn *= ds[d];
    }
    // Element value = its global linear index, so a misplaced copy shows.
    std::vector<int32_t> src(sn), dst(dn, -1), want(dn, -1);
    std::vector<int64_t> at(rank, 0);
    for (int64_t i = 0; i < sn; ++i) {
      std::vector<int64_t> g(rank);
      for (size_t d = 0; d < rank; ++d)
        g[d] = so[d] + at[d];
      src[i] = static_cast<int32_t>(linear(g, global));
      bool inside = true;
      std::vector<int64_t> local(rank);
      for (size_t d = 0; d < rank; ++d) {
        inside &= g[d] >= dOff[d] && g[d] < dOff[d] + ds[d];
        local[d] = g[d] - dOff[d];
      }
      if (inside)
        want[linear(local, ds)] = src[i];
      for (size_t d = rank; d-- > 0;) {
        if (++at[d] < ss[d])
          break;
        at[d] = 0;
      }
    }
    int64_t copied =
        copyOverlap(src.data(), so, ss, dst.data(), dOff, ds, sizeof(int32_t));
    int64_t expected = 0;
    for (int32_t v : want)
      expected += v >= 0;
    ASSERT_EQ(copied, expected) << "trial " << trial;
    ASSERT_EQ(dst, want) << "trial " << trial;
    EXPECT_EQ(boxesOverlap(so, ss, dOff, ds), expected > 0);
  }
}

TEST(CheckpointFormat, SafetensorsHeaderRoundTrips) {
  std::vector<SafetensorsEntry> entries(2);
  entries[0] = {"w", distrt::DType::kF32, {2, 3}, 0, 24};
  entries[1] = {"w@[2, 0]", distrt::DType::kI64, {1}, 24, 32};
  std::string header = writeSafetensorsHeader(entries, {{"w", "offsets"}});
  ASSERT_EQ(header.size() % 8, 0u);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= uint64_t(static_cast<uint8_t>(header[i])) << (8 * i);
  ASSERT_EQ(n, header.size() - 8);
  auto parsed =
      parseSafetensorsHeader(llvm::StringRef(header).drop_front(8), 32, "f");
  ASSERT_TRUE(static_cast<bool>(parsed)) << toString(parsed.takeError());
  ASSERT_EQ(parsed->size(), 2u);
  for (const SafetensorsEntry &e : *parsed) {
    const SafetensorsEntry &w = e.name == "w" ? entries[0] : entries[1];
    EXPECT_EQ(e.name, w.name);
    EXPECT_EQ(e.dtype, w.dtype);
    EXPECT_EQ(e.shape, w.shape);
    EXPECT_EQ(e.begin, w.begin);
    EXPECT_EQ(e.end, w.end);
  }
  // A data section too small for the last tensor.
  auto small =
      parseSafetensorsHeader(llvm::StringRef(header).drop_front(8), 31, "f");
  ASSERT_FALSE(static_cast<bool>(small));
  EXPECT_NE(toString(small.takeError()).find("data_offsets"),
            std::string::npos);
}

Index twoPieceIndex() {
  Index index;
  index.step = 7;
  index.modelFile = "model.onnx";
  index.fingerprint = "00ff";
  index.mesh = "dp=2";
  index.plan = "fsdp";
  index.ranks = 2;
  index.configFile = "train.json";
  index.configText = "{\"steps\": 9}\n";
  index.dataSource = "tokens";
  index.dataPosition = 4096;
  index.files = {{"a", 0, 100, 16, 1, 2}, {"b", 1, 60, 16, 3, 4}};
  TensorEntry t;
  t.name = "w";
  t.dtype = distrt::DType::kF32;
  t.shape = {4, 5};
  t.pieces = {{"a", {0, 0}, {2, 5}, 16, 56, 9, {9}},
              {"b", {2, 0}, {2, 5}, 20, 60, 10, {10}}};
  index.tensors = {t};
  return index;
}

TEST(CheckpointFormat, IndexRoundTrips) {
  Index index = twoPieceIndex();
  auto parsed = parseIndex(writeIndex(index), "index.json");
  ASSERT_TRUE(static_cast<bool>(parsed)) << toString(parsed.takeError());
  EXPECT_EQ(parsed->step, 7);
  EXPECT_EQ(parsed->configText, index.configText);
  EXPECT_EQ(parsed->dataPosition, 4096);
  ASSERT_EQ(parsed->files.size(), 2u);
  ASSERT_EQ(parsed->tensors.size(), 1u);
  const Piece &p = parsed->tensors[0].pieces[1];
  EXPECT_EQ(p.file, "b");
  EXPECT_EQ(p.offsets, (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(p.begin, 20u);
  EXPECT_EQ(p.crc32, 10u);
  EXPECT_EQ(p.blockCrc32, (std::vector<uint32_t>{10}));
}

TEST(CheckpointFormat, LossScalerRoundTrips) {
  Index index = twoPieceIndex();
  auto without = parseIndex(writeIndex(index), "index.json");
  ASSERT_TRUE(static_cast<bool>(without)) << toString(without.takeError());
  EXPECT_FALSE(without->scaler.has_value());
  index.scaler = ScalerRecord{262144.0, 3, 1, 5};
  auto parsed = parseIndex(writeIndex(index), "index.json");
  ASSERT_TRUE(static_cast<bool>(parsed)) << toString(parsed.takeError());
  ASSERT_TRUE(parsed->scaler.has_value());
  EXPECT_EQ(parsed->scaler->scale, 262144.0);
  EXPECT_EQ(parsed->scaler->cleanSteps, 3);
  EXPECT_EQ(parsed->scaler->hysteresisLeft, 1);
  EXPECT_EQ(parsed->scaler->appliedSteps, 5);
  // More updates applied than steps ran.
  index.scaler->appliedSteps = 8;
  auto refused = parseIndex(writeIndex(index), "index.json");
  ASSERT_FALSE(static_cast<bool>(refused));
  EXPECT_EQ(toString(refused.takeError()),
            "index.json: loss_scaler: 'applied_steps' must be an integer in "
            "[0, 7]");
}

/// `index`, written and parsed again, is refused with `message`.
void expectRefused(const Index &index, const std::string &message) {
  auto parsed = parseIndex(writeIndex(index), "index.json");
  ASSERT_FALSE(static_cast<bool>(parsed));
  EXPECT_EQ(toString(parsed.takeError()), message);
}

TEST(CheckpointFormat, IndexRefusesWrongBlockChecksums) {
  Index index = twoPieceIndex();
  index.tensors[0].pieces[0].blockCrc32 = {9, 9};
  expectRefused(index, "index.json: tensor 'w': piece 0: 'block_crc32' has 2 "
                       "checksum(s); 40 bytes make 1 blocks of 65536");
}

TEST(CheckpointFormat, BlockChecksumsCoverEveryByteOnce) {
  std::vector<char> data(kChecksumBlock * 2 + 5);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<char>(i * 7);
  std::vector<uint32_t> blocks = blockChecksums(data.data(), data.size());
  ASSERT_EQ(blocks.size(), 3u);
  EXPECT_EQ(blocks[2], crc32(0, data.data() + 2 * kChecksumBlock, 5));
  EXPECT_EQ(blocks[1], crc32(0, data.data() + kChecksumBlock, kChecksumBlock));
  EXPECT_TRUE(blockChecksums(data.data(), 0).empty());
}

// A piece's checksum folded from its blocks' (zlib's crc32_combine), as a
// save computes it, equals LLVM's CRC-32 of the whole piece.
TEST(CheckpointFormat, CombinedBlockChecksumsEqualTheWhole) {
  std::vector<char> data(kChecksumBlock * 3 + 123);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<char>(i * 31 + (i >> 9));
  uint32_t folded = 0;
  uint64_t done = 0;
  for (uint32_t c : blockChecksums(data.data(), data.size())) {
    uint64_t n = std::min<uint64_t>(kChecksumBlock, data.size() - done);
    folded = crc32Combine(folded, c, n);
    done += n;
  }
  EXPECT_EQ(folded, crc32(0, data.data(), data.size()));
  EXPECT_EQ(crc32Combine(crc32(0, "ab", 2), crc32(0, "cde", 3), 3),
            crc32(0, "abcde", 5));
}

TEST(CheckpointFormat, IndexRefusesOverlappingPieces) {
  Index index = twoPieceIndex();
  index.tensors[0].pieces[1].offsets = {1, 0};
  expectRefused(index, "index.json: tensor 'w': piece 1: overlaps another "
                       "piece (at [0, 0] in 'a')");
}

TEST(CheckpointFormat, FingerprintIgnoresOrderButNotShapes) {
  using T = std::tuple<std::string, distrt::DType, std::vector<int64_t>>;
  std::vector<T> a{{"x", distrt::DType::kF32, {2}},
                   {"y", distrt::DType::kF32, {3}}};
  std::vector<T> b{a[1], a[0]};
  std::vector<T> c{{"x", distrt::DType::kF32, {3}}, a[1]};
  EXPECT_EQ(fingerprint(a), fingerprint(b));
  EXPECT_NE(fingerprint(a), fingerprint(c));
  EXPECT_EQ(fingerprint(a).size(), 16u);
}

} // namespace
