//===- Timer.cpp - check and time a candidate bundle on the GPU -----------===//
//
// timeBundle: a worker per GPU (all of one model), the inputs uploaded to
// each and the reference computed once, then the two passes of Timer.h: every
// candidate checked and probed, the finalists timed fully in interleaved
// rounds. The parts are in this folder (TimerImpl.h lists them).
//
//===----------------------------------------------------------------------===//

#include "TimerImpl.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <algorithm>

using namespace llvm;
using namespace flashc;
using namespace flashc::rt;
using namespace flashc::tune::timer;

Expected<tune::TimingsFile>
flashc::tune::timeBundle(StringRef dir, const BundleManifest &manifest,
                         const TimerOptions &options) {
  if (manifest.candidates.empty())
    return createStringError(inconvertibleErrorCode(),
                             "the bundle has no candidates");
  if (manifest.shapes.empty())
    return createStringError(inconvertibleErrorCode(),
                             "the bundle has no shapes");
  if (options.iters == 0)
    return createStringError(inconvertibleErrorCode(), "--iters must be > 0");
  Clock::time_point start = Clock::now();
  Expected<const DriverApi *> driver = getDriver();
  if (!driver)
    return driver.takeError();
  const DriverApi &cu = **driver;

  std::vector<int> ordinals = options.devices;
  if (ordinals.empty()) {
    int count = 0;
    if (Error err = checkCu(cu.cuDeviceGetCount(&count), "cuDeviceGetCount"))
      return std::move(err);
    for (int i = 0; i < std::max(count, 1); ++i)
      ordinals.push_back(i);
  }
  std::vector<std::unique_ptr<DeviceWorker>> workers;
  for (int ordinal : ordinals) {
    Expected<DeviceInfo> device = getDeviceInfo(ordinal);
    if (!device)
      return device.takeError();
    workers.push_back(std::make_unique<DeviceWorker>(cu, *device, options));
  }
  // Timings on different GPUs are only comparable on one model.
  for (const auto &w : workers)
    if (w->device().name != workers.front()->device().name)
      return createStringError(
          inconvertibleErrorCode(),
          "GPU %d is a %s but GPU %d is a %s: time on one model at a time "
          "(--device)",
          w->device().ordinal, w->device().name.c_str(),
          workers.front()->device().ordinal,
          workers.front()->device().name.c_str());

  SmallString<256> firstBinary(dir);
  sys::path::append(firstBinary, manifest.candidates.front().binary);
  Expected<KernelMetadata> meta = loadMetadataFile(firstBinary);
  if (!meta)
    return meta.takeError();

  std::vector<ShapeLayout> layouts;
  for (const ProblemShape &shape : manifest.shapes)
    layouts.emplace_back(shape, *meta, options.rotateBytes);
  for (auto &w : workers)
    if (Error err = w->init(layouts))
      return std::move(err);

  // Check on the smallest shape: its reference is the cheapest.
  size_t checkShape = 0;
  for (size_t i = 1; i < layouts.size(); ++i)
    if (layouts[i].elems[0] < layouts[checkShape].elems[0])
      checkShape = i;
  InputGenerator generator(options.seed);
  std::vector<uint16_t> bits;
  std::vector<uint16_t> checkBits[3];
  for (auto [i, layout] : enumerate(layouts))
    for (size_t set = 0; set < layout.numSets; ++set)
      for (unsigned t = 0; t < 3; ++t) {
        generator.fill(layout, t, bits);
        for (auto &w : workers)
          if (Error err = w->upload(i, set, t, bits))
            return std::move(err);
        if (i == checkShape && set == 0)
          checkBits[t] = bits;
      }
  ExpectedRows expected =
      computeExpected(layouts[checkShape], checkShape, checkBits, *meta,
                      options);
  for (std::vector<uint16_t> &b : checkBits)
    b = {};
  if (options.progress)
    *options.progress << formatv("inputs and reference ready in {0:f1} s "
                                 "({1} GPU(s): {2})\n",
                                 secondsSince(start), workers.size(),
                                 workers.front()->device().name);

  TimingsFile file;
  file.gpu = workers.front()->device().name;
  file.manifest = manifest;
  std::optional<Progress> progress;
  Session session{dir, manifest, options, expected, progress};
  session.numWorkers = workers.size();
  session.results.resize(manifest.candidates.size());
  session.finalShapes.resize(manifest.candidates.size());
  session.samples.assign(
      manifest.candidates.size(),
      std::vector<std::vector<float>>(manifest.shapes.size()));
  std::vector<size_t> all(manifest.candidates.size());
  for (size_t i = 0; i < all.size(); ++i)
    all[i] = i;
  runWorkers(session, workers, Pass::Probe, std::move(all), "probing");
  bool probed = options.screenRatio > 0 && options.probe < options.iters;
  if (!session.fatal && probed) {
    std::vector<size_t> finalists = chooseFinalists(session);
    for (size_t index : finalists)
      for (size_t shape : session.finalShapes[index])
        session.samples[index][shape].clear();
    // Round r gets its share of `iters` launches; a clock that drifts during
    // the run then moves every finalist's median alike.
    unsigned rounds = std::clamp(options.rounds, 1u, options.iters);
    for (unsigned r = 0; r < rounds && !session.fatal; ++r) {
      session.roundLaunches =
          options.iters / rounds + (r < options.iters % rounds ? 1 : 0);
      runWorkers(session, workers, Pass::Final, finalists,
                 rounds > 1 ? formatv("timing {0}/{1}", r + 1, rounds).str()
                            : "timing");
    }
  }
  collectTimings(session, file);
  if (options.progress)
    *options.progress << formatv("timed {0} candidates x {1} shapes in "
                                 "{2:f1} s\n",
                                 manifest.candidates.size(),
                                 manifest.shapes.size(), secondsSince(start));
  return file;
}
