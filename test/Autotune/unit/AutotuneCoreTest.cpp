//===- AutotuneCoreTest.cpp - flash-tune's search, database, selection ----===//
//
// What runs without MLIR and without a GPU: the cross product of the axes,
// shapes and buckets, the tuning database (round trip, upsert, corrupt and
// foreign files left alone, look-up), the bundle manifest and timings files,
// winner selection on recorded timings, and ptxas's resource report.
//
//===----------------------------------------------------------------------===//

#include "flashc/Autotune/Bundle.h"
#include "flashc/Autotune/Files.h"
#include "flashc/Autotune/Progress.h"
#include "flashc/Autotune/PtxasReport.h"
#include "flashc/Autotune/SearchSpace.h"
#include "flashc/Autotune/Selection.h"
#include "flashc/Autotune/TuningDb.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

using namespace llvm;
using namespace flashc::tune;
using flashc::ScheduleSwitches;

namespace {

/// A fresh directory, removed with its files at the end of a test.
class TempDir {
public:
  TempDir() {
    EXPECT_FALSE(sys::fs::createUniqueDirectory("autotune-test", path));
  }
  ~TempDir() { sys::fs::remove_directories(path); }
  std::string file(StringRef name) const {
    SmallString<256> p(path);
    sys::path::append(p, name);
    return std::string(p);
  }
  size_t count() const {
    std::error_code ec;
    size_t n = 0;
    for (sys::fs::directory_iterator it(path, ec), end; !ec && it != end;
         it.increment(ec))
      ++n;
    return n;
  }
  SmallString<128> path;
};

TuneConfig config(int64_t bm, int64_t bn, int64_t s, int64_t wg) {
  return {bm, bn, s, wg, true, wg == 2, true};
}

TuningEntry entry(StringRef gpu, ProblemShape shape, TuneConfig c) {
  TuningEntry e;
  e.sourceHash = "abc123";
  e.arch = "sm_90a";
  e.gpu = gpu.str();
  e.bucket = bucketOf(shape);
  e.kernel = "attention";
  e.shape = shape;
  e.config = c;
  e.medianMs = 1.5;
  e.tflops = 500;
  e.candidates = 12;
  return e;
}

std::string message(Error err) { return toString(std::move(err)); }

//===--- search space
//------------------------------------------------------===//

TEST(SearchSpace, CrossProductInOrder) {
  SearchSpace space;
  space.blockM = {64, 128};
  space.blockN = {64, 128, 256};
  space.stages = {2};
  space.warpgroups = {1, 2};
  space.axis(&ScheduleSwitches::overlap) = {true};
  space.axis(&ScheduleSwitches::pingpong) = {true, false};
  space.axis(&ScheduleSwitches::splitRelease) = {true};
  std::vector<TuneConfig> configs = enumerateConfigs(space);
  ASSERT_EQ(configs.size(), space.size());
  EXPECT_EQ(configs.size(), 2u * 3 * 1 * 2 * 1 * 2 * 1);
  EXPECT_EQ(configs.front(), (TuneConfig{64, 64, 2, 1, true, true, true}));
  EXPECT_EQ(configs[1], (TuneConfig{64, 64, 2, 1, true, false, true}));
  EXPECT_EQ(configs.back(), (TuneConfig{128, 256, 2, 2, true, false, true}));
  // No point is pruned here: the verifier and the conversion decide.
  std::set<TuneConfig> unique(configs.begin(), configs.end());
  EXPECT_EQ(unique.size(), configs.size());
}

TEST(SearchSpace, DefaultSpaceSearchesTheTileAxes) {
  SearchSpace space;
  EXPECT_EQ(enumerateConfigs(space).size(), space.size());
  EXPECT_EQ(space.size(), 4u * 7u * 4u * 4u * 2u);
  for (size_t n : {space.blockM.size(), space.blockN.size(),
                   space.stages.size(), space.warpgroups.size(),
                   space.axis(&ScheduleSwitches::overlap).size()})
    EXPECT_GT(n, 1u);
  EXPECT_EQ(space.axis(&ScheduleSwitches::pingpong), SmallVector<bool>{true});
  EXPECT_EQ(space.axis(&ScheduleSwitches::splitRelease), SmallVector<bool>{true});
  EXPECT_EQ(space.axis(&ScheduleSwitches::persistent), SmallVector<bool>{false});
  EXPECT_EQ(space.axis(&ScheduleSwitches::tmaStoreO), SmallVector<bool>{true});
  EXPECT_EQ(space.axis(&ScheduleSwitches::dynamicSchedule), SmallVector<bool>{true});
  EXPECT_EQ(space.axis(&ScheduleSwitches::speculativeExp), SmallVector<bool>{false});
}

TEST(SearchSpace, SpeculativeExpIsAnAxis) {
  SearchSpace space;
  space.blockM = {128};
  space.blockN = {128};
  space.stages = {2};
  space.warpgroups = {2};
  space.axis(&ScheduleSwitches::overlap) = {true};
  space.axis(&ScheduleSwitches::persistent) = {true};
  space.axis(&ScheduleSwitches::speculativeExp) = {false, true};
  std::vector<TuneConfig> configs = enumerateConfigs(space);
  ASSERT_EQ(configs.size(), 2u);
  EXPECT_FALSE(configs[0].switches.speculativeExp);
  EXPECT_TRUE(configs[1].switches.speculativeExp);
  EXPECT_EQ(configs[0].str(), "bm128 bn128 s2 wg2 ps");
  EXPECT_EQ(configs[1].str(), "bm128 bn128 s2 wg2 ps spx");
}

TEST(Config, SpeculativeExpJsonRoundTripAndLegacyDefault) {
  TuneConfig config{128, 128, 2, 2, true, true, true, true, false, true, true};
  Expected<TuneConfig> back = configFromJson(json::Value(toJson(config)), "c");
  ASSERT_TRUE(bool(back));
  EXPECT_EQ(*back, config);
  // Entries from before the flag ran without it.
  json::Object object = toJson(config);
  object.erase("speculative_exp");
  Expected<TuneConfig> legacy =
      configFromJson(json::Value(std::move(object)), "c");
  ASSERT_TRUE(bool(legacy));
  EXPECT_FALSE(legacy->switches.speculativeExp);
  json::Object bad = toJson(config);
  bad["speculative_exp"] = 3;
  Expected<TuneConfig> wrong = configFromJson(json::Value(std::move(bad)), "c");
  ASSERT_FALSE(bool(wrong));
  EXPECT_NE(
      message(wrong.takeError()).find("expected 0 or 1 at c.speculative_exp"),
      std::string::npos);
}

TEST(SearchSpace, DynamicScheduleIsAnAxis) {
  SearchSpace space;
  space.blockM = {128};
  space.blockN = {128};
  space.stages = {4};
  space.warpgroups = {2};
  space.axis(&ScheduleSwitches::overlap) = {true};
  space.axis(&ScheduleSwitches::persistent) = {true};
  space.axis(&ScheduleSwitches::dynamicSchedule) = {true, false};
  std::vector<TuneConfig> configs = enumerateConfigs(space);
  ASSERT_EQ(configs.size(), 2u);
  EXPECT_TRUE(configs[0].switches.dynamicSchedule);
  EXPECT_FALSE(configs[1].switches.dynamicSchedule);
  EXPECT_NE(configs[0], configs[1]);
  EXPECT_EQ(configs[0].str(), "bm128 bn128 s4 wg2 ps");
  EXPECT_EQ(configs[1].str(), "bm128 bn128 s4 wg2 ps -dyn");
}

TEST(Config, DynamicScheduleJsonRoundTripAndLegacyDefault) {
  TuneConfig config{128, 128, 4, 2, true, true, true, true, false, false};
  Expected<TuneConfig> back = configFromJson(json::Value(toJson(config)), "c");
  ASSERT_TRUE(bool(back));
  EXPECT_EQ(*back, config);
  // A persistent entry from before the flag ran the static pairs; for a
  // one-block-per-tile entry the flag keeps the config's default.
  for (bool persistent : {true, false}) {
    TuneConfig old = config;
    old.switches.persistent = persistent;
    old.switches.dynamicSchedule = true;
    json::Object object = toJson(old);
    object.erase("dynamic_schedule");
    Expected<TuneConfig> legacy =
        configFromJson(json::Value(std::move(object)), "c");
    ASSERT_TRUE(bool(legacy));
    EXPECT_EQ(legacy->switches.dynamicSchedule, !persistent) << persistent;
  }
  json::Object bad = toJson(config);
  bad["dynamic_schedule"] = 2;
  Expected<TuneConfig> wrong = configFromJson(json::Value(std::move(bad)), "c");
  ASSERT_FALSE(bool(wrong));
  EXPECT_NE(
      message(wrong.takeError()).find("expected 0 or 1 at c.dynamic_schedule"),
      std::string::npos);
}

TEST(SearchSpace, TmaStoreIsAnAxis) {
  SearchSpace space;
  space.blockM = {256};
  space.blockN = {64};
  space.stages = {2};
  space.warpgroups = {4};
  space.axis(&ScheduleSwitches::overlap) = {false};
  space.axis(&ScheduleSwitches::tmaStoreO) = {true, false};
  std::vector<TuneConfig> configs = enumerateConfigs(space);
  ASSERT_EQ(configs.size(), 2u);
  EXPECT_TRUE(configs[0].switches.tmaStoreO);
  EXPECT_FALSE(configs[1].switches.tmaStoreO);
  EXPECT_NE(configs[0], configs[1]);
  EXPECT_EQ(configs[0].str(), "bm256 bn64 s2 wg4 -ov");
  EXPECT_EQ(configs[1].str(), "bm256 bn64 s2 wg4 -ov -tma");
}

TEST(Config, TmaStoreJsonRoundTripAndLegacyDefault) {
  TuneConfig config{256, 64, 2, 4, false, false, true, false, false};
  json::Value value(toJson(config));
  Expected<TuneConfig> back = configFromJson(value, "c");
  ASSERT_TRUE(bool(back));
  EXPECT_EQ(*back, config);
  // Entries written before the flag existed ran with the TMA store exactly
  // when they had one or two consumer warpgroups.
  for (int64_t warpgroups : {1, 2, 3, 4}) {
    TuneConfig old = config;
    old.warpgroups = warpgroups;
    old.blockM = 64 * warpgroups;
    json::Object object = toJson(old);
    object.erase("tma_store_o");
    Expected<TuneConfig> legacy =
        configFromJson(json::Value(std::move(object)), "c");
    ASSERT_TRUE(bool(legacy));
    EXPECT_EQ(legacy->switches.tmaStoreO, warpgroups <= 2) << warpgroups;
  }
  json::Object bad = toJson(config);
  bad["tma_store_o"] = -1;
  Expected<TuneConfig> wrong = configFromJson(json::Value(std::move(bad)), "c");
  ASSERT_FALSE(bool(wrong));
  EXPECT_NE(message(wrong.takeError()).find("expected 0 or 1 at c.tma_store_o"),
            std::string::npos);
}

TEST(SearchSpace, PersistentIsAnAxis) {
  SearchSpace space;
  space.blockM = {128};
  space.blockN = {128};
  space.stages = {2};
  space.warpgroups = {2};
  space.axis(&ScheduleSwitches::overlap) = {true};
  space.axis(&ScheduleSwitches::persistent) = {false, true};
  std::vector<TuneConfig> configs = enumerateConfigs(space);
  ASSERT_EQ(configs.size(), 2u);
  EXPECT_FALSE(configs[0].switches.persistent);
  EXPECT_TRUE(configs[1].switches.persistent);
  EXPECT_NE(configs[0], configs[1]);
  EXPECT_EQ(configs[0].str(), "bm128 bn128 s2 wg2");
  EXPECT_EQ(configs[1].str(), "bm128 bn128 s2 wg2 ps");
}

TEST(Config, PersistentJsonRoundTripAndDefault) {
  TuneConfig config{128, 176, 2, 2, true, true, true, true};
  json::Value value(toJson(config));
  Expected<TuneConfig> back = configFromJson(value, "c");
  ASSERT_TRUE(bool(back));
  EXPECT_EQ(*back, config);
  // Databases written before the switch existed have no "persistent".
  json::Object old = toJson(config);
  old.erase("persistent");
  Expected<TuneConfig> legacy = configFromJson(json::Value(std::move(old)), "c");
  ASSERT_TRUE(bool(legacy));
  EXPECT_FALSE(legacy->switches.persistent);
  json::Object bad = toJson(config);
  bad["persistent"] = 2;
  Expected<TuneConfig> wrong = configFromJson(json::Value(std::move(bad)), "c");
  ASSERT_FALSE(bool(wrong));
  EXPECT_NE(message(wrong.takeError()).find("expected 0 or 1 at c.persistent"),
            std::string::npos);
}

TEST(SearchSpace, ParseLists) {
  Expected<SmallVector<int64_t>> ints = parseIntList("64, 128,256");
  ASSERT_TRUE(bool(ints));
  EXPECT_EQ(*ints, (SmallVector<int64_t>{64, 128, 256}));
  EXPECT_FALSE(bool(parseIntList("64,x")));
  consumeError(parseIntList("64,x").takeError());
  Expected<SmallVector<int64_t>> negative = parseIntList("-1");
  EXPECT_FALSE(bool(negative));
  consumeError(negative.takeError());
  Expected<SmallVector<bool>> flags = parseFlagList("1,off,true");
  ASSERT_TRUE(bool(flags));
  EXPECT_EQ(*flags, (SmallVector<bool>{true, false, true}));
  Expected<SmallVector<bool>> bad = parseFlagList("maybe");
  EXPECT_FALSE(bool(bad));
  consumeError(bad.takeError());
}

//===--- shapes and buckets
//------------------------------------------------===//

TEST(Shape, ParseAndBucket) {
  Expected<ProblemShape> shape = parseShape("2,16,3000,128");
  ASSERT_TRUE(bool(shape));
  EXPECT_EQ(*shape, (ProblemShape{2, 16, 3000, 128}));
  ShapeBucket bucket = bucketOf(*shape);
  EXPECT_EQ(bucket, (ShapeBucket{4096, 128, 32}));
  // Same bucket: N up to the next power of two, B*H likewise.
  EXPECT_EQ(bucketOf({4, 6, 4096, 128}), bucket);
  // D is exact; N past the power of two is the next bucket.
  EXPECT_NE(bucketOf({2, 16, 3000, 64}), bucket);
  EXPECT_NE(bucketOf({2, 16, 4097, 128}), bucket);
  for (StringRef bad : {"2,16,3000", "2,16,0,128", "a,b,c,d", ""}) {
    Expected<ProblemShape> s = parseShape(bad);
    EXPECT_FALSE(bool(s)) << bad.str();
    if (!s) {
      EXPECT_NE(message(s.takeError()).find("B,H,N,D"), std::string::npos);
    }
  }
}

//===--- the database
//------------------------------------------------------===//

TEST(TuningDb, RoundTripThroughAFile) {
  TempDir dir;
  TuningDb db;
  db.upsert(entry("NVIDIA H200", {2, 16, 4096, 128}, config(128, 128, 2, 2)));
  db.upsert(entry("NVIDIA H100", {2, 16, 1024, 128}, config(128, 176, 2, 2)));
  std::string path = dir.file("tuning.json");
  ASSERT_FALSE(bool(db.save(path)));
  EXPECT_EQ(dir.count(), 1u) << "the temporary file is renamed away";

  Expected<TuningDb> loaded = TuningDb::load(path);
  ASSERT_TRUE(bool(loaded)) << message(loaded.takeError());
  ASSERT_EQ(loaded->getEntries().size(), 2u);
  EXPECT_EQ(json::Value(loaded->toJson()), json::Value(db.toJson()));
  const TuningEntry &e = loaded->getEntries()[1];
  EXPECT_EQ(e.gpu, "NVIDIA H200");
  EXPECT_EQ(e.config, config(128, 128, 2, 2));
  EXPECT_EQ(e.bucket, (ShapeBucket{4096, 128, 32}));
  EXPECT_EQ(e.candidates, 12);
}

TEST(TuningDb, UpsertReplacesTheSameKey) {
  TuningDb db;
  db.upsert(entry("NVIDIA H200", {2, 16, 4096, 128}, config(128, 128, 2, 2)));
  // Another shape of the same bucket replaces the entry.
  db.upsert(entry("NVIDIA H200", {4, 8, 3000, 128}, config(192, 128, 2, 3)));
  ASSERT_EQ(db.getEntries().size(), 1u);
  EXPECT_EQ(db.getEntries()[0].config, config(192, 128, 2, 3));
  // Another GPU is another key.
  db.upsert(entry("NVIDIA H100", {4, 8, 3000, 128}, config(128, 128, 2, 2)));
  EXPECT_EQ(db.getEntries().size(), 2u);
}

TEST(TuningDb, CorruptFileIsAnErrorAndLeftAlone) {
  TempDir dir;
  std::string path = dir.file("tuning.json");
  std::string garbage = "{\"format\": \"flashc-tuning-db\", \"entr";
  ASSERT_FALSE(bool(writeFileAtomically(path, garbage)));
  Expected<TuningDb> db = TuningDb::loadForUpdate(path);
  ASSERT_FALSE(bool(db));
  std::string text = message(db.takeError());
  EXPECT_NE(text.find("not valid JSON"), std::string::npos) << text;
  EXPECT_NE(text.find(path), std::string::npos) << text;
  EXPECT_NE(text.find("left as it is"), std::string::npos) << text;
  Expected<std::string> after = readFile(path);
  ASSERT_TRUE(bool(after));
  EXPECT_EQ(*after, garbage);
}

TEST(TuningDb, ForeignFilesAreNamed) {
  struct Case {
    const char *text;
    const char *expected;
  } cases[] = {
      {R"({"format": "flashc-kernel", "format_version": 1})",
       "not a flashc-tuning-db file (its \"format\" is \"flashc-kernel\")"},
      {R"([1, 2, 3])", "expected object when parsing db.json"},
      {R"({"entries": []})", "\"format\" is missing"},
      {R"({"format": "flashc-tuning-db", "format_version": 7, "entries": []})",
       "format_version 7 is not supported"},
      {R"({"format": "flashc-tuning-db", "format_version": 1,
           "entries": [{"source_hash": "a", "arch": "sm_90a", "gpu": "g",
                        "kernel": "k"}]})",
       "missing value at db.json.entries[0].bucket"},
      {R"({"format": "flashc-tuning-db", "format_version": 1,
           "entries": [{"source_hash": "a", "arch": "sm_90a", "gpu": "g",
             "kernel": "k", "bucket": {"seq": 1, "head_dim": 64,
             "batch_heads": 1}, "shape": [1, 1, 1, 64],
             "config": {"block_m": 128, "block_n": 128, "stages": 2,
                        "warpgroups": 2, "overlap": 1, "pingpong": 3,
                        "split_release": 1},
             "median_ms": 1, "tflops": 1, "candidates": 1}]})",
       "expected 0 or 1 at db.json.entries[0].config.pingpong"},
  };
  for (const Case &c : cases) {
    Expected<TuningDb> db = TuningDb::parse(c.text, "db.json");
    ASSERT_FALSE(bool(db)) << c.text;
    std::string text = message(db.takeError());
    EXPECT_NE(text.find(c.expected), std::string::npos)
        << "got: " << text << "\nwanted: " << c.expected;
  }
}

TEST(TuningDb, MissingFileForUpdateIsEmpty) {
  TempDir dir;
  Expected<TuningDb> db = TuningDb::loadForUpdate(dir.file("new.json"));
  ASSERT_TRUE(bool(db));
  EXPECT_TRUE(db->getEntries().empty());
  Expected<TuningDb> missing = TuningDb::load(dir.file("new.json"));
  ASSERT_FALSE(bool(missing));
  EXPECT_NE(message(missing.takeError()).find("cannot read"),
            std::string::npos);
}

TEST(TuningDb, LookupByShapeBucket) {
  TuningDb db;
  db.upsert(entry("NVIDIA H200", {2, 16, 4096, 128}, config(128, 128, 2, 2)));
  Expected<const TuningEntry *> hit =
      lookupTuning(db, "abc123", "sm_90a", "", {1, 32, 3000, 128});
  ASSERT_TRUE(bool(hit)) << message(hit.takeError());
  EXPECT_EQ((*hit)->config, config(128, 128, 2, 2));

  Expected<const TuningEntry *> otherGpu =
      lookupTuning(db, "abc123", "sm_90a", "NVIDIA H100", {2, 16, 4096, 128});
  ASSERT_FALSE(bool(otherGpu));
  consumeError(otherGpu.takeError());

  Expected<const TuningEntry *> miss =
      lookupTuning(db, "abc123", "sm_90a", "", {2, 16, 16384, 128});
  ASSERT_FALSE(bool(miss));
  std::string text = message(miss.takeError());
  EXPECT_NE(text.find("no tuning entry for shape 2,16,16384,128"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("N<=4096 D=128 BH<=32"), std::string::npos) << text;

  Expected<const TuningEntry *> edited =
      lookupTuning(db, "fff", "sm_90a", "", {2, 16, 4096, 128});
  ASSERT_FALSE(bool(edited));
  EXPECT_NE(message(edited.takeError()).find("edited after tuning"),
            std::string::npos);

  db.upsert(entry("NVIDIA H100", {2, 16, 4096, 128}, config(64, 128, 2, 1)));
  Expected<const TuningEntry *> ambiguous =
      lookupTuning(db, "abc123", "sm_90a", "", {2, 16, 4096, 128});
  ASSERT_FALSE(bool(ambiguous));
  EXPECT_NE(message(ambiguous.takeError()).find("--gpu"), std::string::npos);
  Expected<const TuningEntry *> picked =
      lookupTuning(db, "abc123", "sm_90a", "NVIDIA H100", {2, 16, 4096, 128});
  ASSERT_TRUE(bool(picked));
  EXPECT_EQ((*picked)->config, config(64, 128, 2, 1));
}

TEST(TuningDb, TableHasOneLinePerEntry) {
  TuningDb db;
  db.upsert(entry("NVIDIA H200", {2, 16, 4096, 128}, config(128, 128, 2, 2)));
  std::string text;
  raw_string_ostream os(text);
  db.printTable(os);
  EXPECT_NE(text.find("NVIDIA H200"), std::string::npos) << text;
  EXPECT_NE(text.find("bm128 bn128 s2 wg2"), std::string::npos)
      << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2);
}

//===--- selection on recorded timings
//--------------------------------------===//

CandidateTiming timing(StringRef id, ProblemShape shape, TimingStatus status,
                       double ms) {
  CandidateTiming t;
  t.candidate = id.str();
  t.config = config(128, 128, 2, 2);
  t.config.blockN = 64 + 16 * int64_t(id.back() - '0');
  t.shape = shape;
  t.status = status;
  t.medianMs = ms;
  return t;
}

TEST(Selection, FastestCheckedCandidateWins) {
  ProblemShape small{1, 16, 1024, 128}, large{1, 16, 4096, 128},
      none{1, 16, 16384, 128};
  std::vector<CandidateTiming> timings = {
      timing("c1", small, TimingStatus::Ok, 0.30),
      // Fastest but wrong: may never win.
      timing("c2", small, TimingStatus::CheckFailed, 0.10),
      timing("c3", small, TimingStatus::Ok, 0.25),
      timing("c4", small, TimingStatus::Error, 0),
      timing("c1", large, TimingStatus::Ok, 2.0),
      timing("c3", large, TimingStatus::Ok, 2.5),
      // A broken measurement is not a win.
      timing("c5", large, TimingStatus::Ok, 0),
      timing("c2", none, TimingStatus::CheckFailed, 0)};
  std::vector<Winner> winners = selectWinners({small, large, none}, timings);
  ASSERT_EQ(winners.size(), 3u);
  ASSERT_TRUE(winners[0].best.has_value());
  EXPECT_EQ(winners[0].best->candidate, "c3");
  EXPECT_EQ(winners[0].timed, 2);
  EXPECT_EQ(winners[0].checkFailed, 1);
  EXPECT_EQ(winners[0].errors, 1);
  ASSERT_TRUE(winners[1].best.has_value());
  EXPECT_EQ(winners[1].best->candidate, "c1");
  EXPECT_EQ(winners[1].errors, 1);
  EXPECT_FALSE(winners[2].best.has_value());
  EXPECT_EQ(winners[2].checkFailed, 1);

  TuningDb db;
  BundleManifest manifest;
  manifest.kernel = "attention";
  manifest.sourceHash = "abc123";
  manifest.arch = "sm_90a";
  EXPECT_EQ(recordWinners(db, manifest, "NVIDIA H200", winners), 2u);
  ASSERT_EQ(db.getEntries().size(), 2u);
  const TuningEntry *first = db.find("abc123", "sm_90a", bucketOf(small))[0];
  EXPECT_EQ(first->config, timings[2].config);
  EXPECT_DOUBLE_EQ(first->medianMs, 0.25);
  EXPECT_NEAR(first->tflops, 4.0 * 16 * 1024 * 1024 * 128 / 0.25e-3 / 1e12,
              1e-9);
  EXPECT_EQ(first->candidates, 2);
}

TEST(Selection, ScreenedProbesNeverWin) {
  // c1's short probe ran faster than anyone's full measurement (clocks in a
  // burst), but only fully timed candidates compare.
  ProblemShape shape{1, 16, 16384, 128};
  std::vector<CandidateTiming> timings = {
      timing("c1", shape, TimingStatus::Ok, 3.52),
      timing("c2", shape, TimingStatus::Ok, 3.56),
      timing("c3", shape, TimingStatus::Ok, 3.68)};
  timings[0].screened = true;
  std::vector<Winner> winners = selectWinners({shape}, timings);
  ASSERT_TRUE(winners[0].best.has_value());
  EXPECT_EQ(winners[0].best->candidate, "c2");
  EXPECT_EQ(winners[0].timed, 3);
  // Only screened timings: no winner rather than a probe.
  timings[1].screened = timings[2].screened = true;
  EXPECT_FALSE(selectWinners({shape}, timings)[0].best.has_value());
}

TEST(Selection, TiesGoToTheSmallerIdWhateverTheOrder) {
  ProblemShape shape{1, 16, 1024, 128};
  std::vector<CandidateTiming> timings = {
      timing("c7", shape, TimingStatus::Ok, 0.5),
      timing("c3", shape, TimingStatus::Ok, 0.5)};
  EXPECT_EQ(selectWinners({shape}, timings)[0].best->candidate, "c3");
  std::reverse(timings.begin(), timings.end());
  EXPECT_EQ(selectWinners({shape}, timings)[0].best->candidate, "c3");
}

TEST(Selection, TimingsFileRoundTrip) {
  TimingsFile file;
  file.gpu = "NVIDIA H200";
  file.manifest.kernel = "attention";
  file.manifest.sourceHash = "abc123";
  file.manifest.arch = "sm_90a";
  file.timings = {timing("c1", {1, 2, 128, 64}, TimingStatus::Ok, 0.1),
                  timing("c2", {1, 2, 128, 64}, TimingStatus::CheckFailed, 0)};
  file.timings[1].message = "check failed";
  file.timings[0].launches = 5;
  file.timings[0].device = 1;
  file.timings[0].screened = true;
  file.incomplete = "c3: the checked launch did not finish";
  std::string text = formatv("{0}", file.toJson()).str();
  Expected<TimingsFile> parsed = TimingsFile::parse(text, "t.json");
  ASSERT_TRUE(bool(parsed)) << message(parsed.takeError());
  EXPECT_EQ(parsed->gpu, "NVIDIA H200");
  ASSERT_EQ(parsed->timings.size(), 2u);
  EXPECT_EQ(parsed->timings[1].status, TimingStatus::CheckFailed);
  EXPECT_EQ(parsed->timings[1].message, "check failed");
  EXPECT_EQ(parsed->timings[0].config, file.timings[0].config);
  EXPECT_EQ(parsed->timings[0].launches, 5);
  EXPECT_EQ(parsed->timings[0].device, 1);
  EXPECT_TRUE(parsed->timings[0].screened);
  EXPECT_FALSE(parsed->timings[1].screened);
  EXPECT_EQ(parsed->timings[1].launches, 0);
  EXPECT_EQ(parsed->timings[1].device, -1);
  EXPECT_EQ(parsed->incomplete, file.incomplete);
  Expected<TimingsFile> foreign =
      TimingsFile::parse(R"({"format": "flashc-tuning-db"})", "t.json");
  ASSERT_FALSE(bool(foreign));
  EXPECT_NE(message(foreign.takeError()).find("not a flashc-tune-timings"),
            std::string::npos);
  // A bad record is named by its JSON path.
  json::Value bad = file.toJson();
  (*(*bad.getAsObject()->getArray("timings"))[1].getAsObject())["status"] =
      "fine";
  Expected<TimingsFile> wrong =
      TimingsFile::parse(formatv("{0}", bad).str(), "t.json");
  ASSERT_FALSE(bool(wrong));
  std::string why = message(wrong.takeError());
  EXPECT_NE(why.find("expected ok, check_failed or error at "
                     "t.json.timings[1].status"),
            std::string::npos)
      << why;
}

//===--- bundle manifest
//---------------------------------------------------===//

TEST(Bundle, ManifestRoundTrip) {
  TempDir dir;
  BundleManifest m;
  m.kernel = "attention";
  m.source = "kernels/attention.mlir";
  m.sourceHash = "abc123";
  m.arch = "sm_90a";
  m.dtype = "bf16";
  m.headDim = 128;
  m.causal = true;
  m.shapes = {{1, 16, 1024, 128}, {1, 16, 4096, 128}};
  m.candidates = {
      {"c0000", "c0000/kernel.cubin", config(128, 128, 2, 2), 168, 0}};
  m.pruned = {{config(64, 256, 4, 1), "conversion", "too much smem"}};
  ASSERT_FALSE(bool(m.save(dir.path)));
  Expected<BundleManifest> loaded = BundleManifest::load(dir.path);
  ASSERT_TRUE(bool(loaded)) << message(loaded.takeError());
  EXPECT_EQ(json::Value(loaded->toJson()), json::Value(m.toJson()));
  EXPECT_TRUE(loaded->causal);
  EXPECT_EQ(loaded->candidates[0].registers, 168);
  EXPECT_EQ(loaded->pruned[0].reason, "too much smem");

  ASSERT_FALSE(bool(writeFileAtomically(dir.file("manifest.json"), "{")));
  Expected<BundleManifest> corrupt = BundleManifest::load(dir.path);
  ASSERT_FALSE(bool(corrupt));
  EXPECT_NE(message(corrupt.takeError()).find("not valid JSON"),
            std::string::npos);

  // A bad candidate is named by its JSON path.
  json::Value bad = m.toJson();
  (*bad.getAsObject()->getArray("candidates"))[0].getAsObject()->erase(
      "binary");
  Expected<BundleManifest> wrong =
      BundleManifest::parse(formatv("{0}", bad).str(), "m.json");
  ASSERT_FALSE(bool(wrong));
  std::string text = message(wrong.takeError());
  EXPECT_NE(text.find("missing value at m.json.candidates[0].binary"),
            std::string::npos)
      << text;
}

//===--- progress
//----------------------------------------------------------===//

TEST(Progress, PlainLinesInALog) {
  std::string text;
  raw_string_ostream os(text);
  Progress progress("timing", 2, os, /*interactive=*/false);
  progress.step("c0000 bm128: 0.5000 ms", 0.5, "c0000");
  progress.step("c0001 bm64: check failed");
  progress.finish();
  EXPECT_EQ(text, "timing 1/2: c0000 bm128: 0.5000 ms\n"
                  "timing 2/2: c0001 bm64: check failed\n");
}

TEST(Progress, BarOnATerminal) {
  std::string text;
  raw_string_ostream os(text);
  Progress progress("timing", 4, os, /*interactive=*/true);
  progress.step("c0000", 0.5, "c0000");
  progress.step("c0001", 0.7, "c0001");
  EXPECT_EQ(text.find('\n'), std::string::npos) << "redrawn in place";
  size_t last = text.rfind('\r');
  ASSERT_NE(last, std::string::npos);
  StringRef line = StringRef(text).drop_front(last);
  EXPECT_TRUE(line.contains("[###############...............] 2/4")) << text;
  EXPECT_TRUE(line.contains("best 0.5000 ms (c0000)")) << text;
  EXPECT_TRUE(line.contains("s left")) << text;
  progress.finish();
  EXPECT_EQ(text.back(), '\n');
}

//===--- ptxas -v
//----------------------------------------------------------===//

TEST(PtxasReport, RegistersAndSpills) {
  PtxasResources clean = parsePtxasReport(
      "ptxas info    : Compiling entry function 'attention' for 'sm_90a'\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 168 registers, used 16 barriers, 80 bytes smem\n");
  EXPECT_EQ(clean.registers, 168);
  EXPECT_EQ(clean.spillBytes, 0);
  PtxasResources spilling = parsePtxasReport(
      "    96 bytes stack frame, 88 bytes spill stores, 120 bytes spill loads\n"
      "ptxas info    : Used 255 registers\n");
  EXPECT_EQ(spilling.registers, 255);
  EXPECT_EQ(spilling.spillBytes, 208);
  EXPECT_EQ(parsePtxasReport("").registers, -1);
  EXPECT_FALSE(clean.serializedWgmma);
}

TEST(PtxasReport, SerializedWgmmaIsPruned) {
  PtxasResources serialized = parsePtxasReport(
      "ptxas info    : (C7513) Potential Performance Loss: wgmma.mma_async "
      "instructions are serialized due to non wgmma instructions defining "
      "input registers of a wgmma between start and end of the pipeline "
      "stage in the function 'attention'\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 168 registers, used 16 barriers, 80 bytes smem\n");
  EXPECT_TRUE(serialized.serializedWgmma);
  EXPECT_EQ(serialized.spillBytes, 0);
  std::optional<PtxasVerdict> verdict =
      ptxasPruneReason(serialized, /*keepSpills=*/false,
                       /*keepSerializedWgmma=*/false);
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->stage, "wgmma");
  EXPECT_TRUE(StringRef(verdict->reason).contains("C7513"));
  EXPECT_TRUE(StringRef(verdict->reason).contains("non wgmma instructions"));
  EXPECT_FALSE(ptxasPruneReason(serialized, false, /*keepSerializedWgmma=*/true)
                   .has_value());

  // Another cause, another code: the same verdict, naming it.
  PtxasResources divergent = parsePtxasReport(
      "ptxas info    : (C7518) Potential Performance Loss: wgmma.mma_async "
      "instructions are serialized due to program dependence on "
      "compiler-inserted WG.DP in divergent path in the function "
      "'attention_d64_causal'\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n");
  EXPECT_TRUE(divergent.serializedWgmma);
  EXPECT_EQ(divergent.wgmmaCode, "C7518");
  std::optional<PtxasVerdict> divergentVerdict =
      ptxasPruneReason(divergent, false, false);
  ASSERT_TRUE(divergentVerdict.has_value());
  EXPECT_EQ(divergentVerdict->stage, "wgmma");
  EXPECT_TRUE(StringRef(divergentVerdict->reason).contains("C7518"));
  EXPECT_TRUE(StringRef(divergentVerdict->reason).contains("divergent path"));
  // An injected wait (C7517) is not a serialised chain.
  EXPECT_FALSE(parsePtxasReport("ptxas info    : (C7517) warpgroup.wait is "
                                "injected in around line 384 by compiler to "
                                "allow use of registers defined by GMMA in "
                                "function 'attention'\n")
                   .serializedWgmma);

  // Spills are the first reason; a clean kernel has none.
  PtxasResources both = serialized;
  both.spillBytes = 16;
  EXPECT_EQ(ptxasPruneReason(both, false, false)->stage, "spills");
  EXPECT_EQ(ptxasPruneReason(both, /*keepSpills=*/true, false)->stage, "wgmma");
  PtxasResources clean;
  clean.registers = 168;
  clean.spillBytes = 0;
  EXPECT_FALSE(ptxasPruneReason(clean, false, false).has_value());
}

} // namespace
