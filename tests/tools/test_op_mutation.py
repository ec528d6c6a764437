#!/usr/bin/env python3
"""CPU tests of tools/op_mutation.py (the package tools/graders/): each operator makes the
expected edit on small snippets, comments and strings are left alone, ids are stable,
duplicates are dropped, the real solutions give at least 150 mutants, and the report and
the equivalents check judge results as they should."""
import csv
import json
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import op_mutation as om  # noqa: E402
# A replacement goes into the module that looks the name up (op_mutation re-exports names).
from graders import equivalents as equivalents_module, grading  # noqa: E402


def region(body: str, prelude: str = "", todo: str = "1") -> str:
    """A solution file with one exercise region holding `body`."""
    return (f"{prelude}void f() {{\n  // TODO {todo}: do it.\n  // BEGIN SOLUTION\n{body}"
            "  // END SOLUTION\n}\n")


def mutants(text: str, headers=None, lesson: str = "99_snippet") -> list:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "snippet.cu"
        path.write_text(text, encoding="utf-8")
        return om.file_mutants(lesson, path, headers or [])


def changes(text: str, operator: str, headers=None) -> list[str]:
    """The changed region lines of every mutant of `operator`, as `before => after`."""
    out = []
    for m in mutants(text, headers):
        if m.operator == operator:
            out.append(m.description)
    return out


class Masking(unittest.TestCase):
    def test_comments_strings_and_preprocessor_lines_are_blank(self):
        text = 'a(); // __syncthreads();\n#pragma unroll\nasm("bar.sync 0;"); /* x */ b();\n'
        masked = om.mask(text)
        self.assertEqual(len(masked), len(text))
        self.assertNotIn("__syncthreads", masked)
        self.assertNotIn("pragma", masked)
        self.assertNotIn("bar.sync", masked)
        self.assertIn('asm("', masked)
        self.assertIn("b();", masked)


class Operators(unittest.TestCase):
    def test_sync_remove_and_weaken(self):
        text = region("  __syncthreads();\n  block.sync();\n  cluster.sync();\n")
        removed = changes(text, "sync-remove")
        self.assertEqual(len(removed), 3)
        self.assertIn("`__syncthreads();` removed", removed)
        weakened = changes(text, "sync-weaken")
        self.assertIn("`__syncthreads();` -> `__syncwarp();`", weakened)
        self.assertIn("`block.sync();` -> `__syncwarp();`", weakened)
        self.assertIn("`cluster.sync();` -> `__syncthreads();`", weakened)

    def test_arrive_and_wait_becomes_an_arrive(self):
        text = region("  bar.arrive_and_wait();\n")
        self.assertIn("`bar.arrive_and_wait();` -> `(void)bar.arrive();`",
                      changes(text, "sync-weaken"))

    def test_a_guarded_sync_is_removed_with_its_guard(self):
        text = region("  if (issuer) ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});\n")
        self.assertEqual(changes(text, "sync-remove"),
                         ["`if (issuer) ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});` "
                          "removed"])
        self.assertIn("`if (issuer) ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});` -> "
                      "`if (issuer) ptx::cp_async_bulk_wait_group_read(ptx::n32_t<1>{});`",
                      changes(text, "wait-count"))

    def test_stream_calls_are_removed(self):
        text = region("  COURSE_CHECK(cudaEventRecord(e, a));\n"
                      "  COURSE_CHECK(cudaStreamWaitEvent(b, e, 0));\n"
                      "  COURSE_CHECK(cudaStreamSynchronize(b));\n")
        self.assertEqual(len(changes(text, "sync-remove")), 3)

    def test_assignments_and_returns_are_not_removed(self):
        text = region("  token = bar.arrive();\n  return cg::wait(block);\n")
        self.assertEqual(changes(text, "sync-remove"), [])

    def test_wait_counts_allow_one_more_in_flight(self):
        text = region("  cg::wait_prior<1>(block);\n  __pipeline_wait_prior(kAhead);\n"
                      "  wait_group<Stages - 2>();\n  cg::wait(block);\n")
        got = changes(text, "wait-count")
        self.assertIn("`cg::wait_prior<1>(block);` -> `cg::wait_prior<2>(block);`", got)
        self.assertIn("`__pipeline_wait_prior(kAhead);` -> `__pipeline_wait_prior(kAhead + 1);`",
                      got)
        self.assertIn("`wait_group<Stages - 2>();` -> `wait_group<Stages - 1>();`", got)
        self.assertIn("`cg::wait(block);` -> `cg::wait_prior<1>(block);`", got)

    def test_declarations_are_not_calls(self):
        text = region("  __device__ inline void wait_group() {}\n"
                      "  __device__ inline void mbarrier_init(unsigned long long* b, unsigned c) {}\n")
        self.assertEqual(changes(text, "wait-count"), [])
        self.assertEqual(changes(text, "count"), [])

    def test_arrival_counts_and_expected_bytes(self):
        text = region("  ptx::mbarrier_init(&full, 1);\n  init(&bar, count);\n"
                      "  ptx::mbarrier_arrive_expect_tx(a, b, c, full, bytes + extra);\n")
        got = changes(text, "count")
        self.assertIn("`ptx::mbarrier_init(&full, 1);` -> `ptx::mbarrier_init(&full, 2);`", got)
        self.assertNotIn("`ptx::mbarrier_init(&full, 1);` -> `ptx::mbarrier_init(&full, 0);`",
                         got)
        self.assertIn("`init(&bar, count);` -> `init(&bar, count + 1);`", got)
        self.assertIn("`init(&bar, count);` -> `init(&bar, count - 1);`", got)
        self.assertIn("`ptx::mbarrier_arrive_expect_tx(a, b, c, full, bytes + extra);` -> "
                      "`ptx::mbarrier_arrive_expect_tx(a, b, c, full, bytes);`", got)
        self.assertIn("`ptx::mbarrier_arrive_expect_tx(a, b, c, full, bytes + extra);` -> "
                      "`ptx::mbarrier_arrive_expect_tx(a, b, c, full, bytes + extra - 16);`", got)

    def test_noinc_in_ptx_is_a_count(self):
        text = region('  asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];" ::"r"(a));\n')
        got = changes(text, "count")
        self.assertEqual(len(got), 1)
        self.assertIn("cp.async.mbarrier.arrive.shared.b64", got[0])

    def test_stage_counts_and_indices(self):
        text = region("  for (; f < mine && f < k + Stages; ++f) use(buf[f % Stages]);\n"
                      "  if (k >= Stages) use(empty[(k - 1) % Stages]);\n"
                      "  const int next = tile + Stages - 1;\n")
        counts = changes(text, "stage-count")
        self.assertIn("f < k + Stages + 1", " ".join(counts))
        self.assertIn("k >= Stages + 1", " ".join(counts))
        self.assertIn("`const int next = tile + Stages - 1;` -> `const int next = tile + Stages;`",
                      counts)
        indices = " ".join(changes(text, "stage-index"))
        self.assertIn("buf[(f + 1) % Stages]", indices)
        self.assertIn("empty[k % Stages]", indices)

    def test_parities(self):
        text = region("  wait_parity(&bar, (tile / Stages) & 1);\n"
                      "  empty[s].wait_parity((j - 1) / Stages % 2 == 1);\n")
        got = changes(text, "phase")
        self.assertIn("`wait_parity(&bar, (tile / Stages) & 1);` -> "
                      "`wait_parity(&bar, (tile / Stages));`", got)
        self.assertIn("`wait_parity(&bar, (tile / Stages) & 1);` -> "
                      "`wait_parity(&bar, ((tile / Stages) & 1) ^ 1);`", got)
        self.assertIn("`empty[s].wait_parity((j - 1) / Stages % 2 == 1);` -> "
                      "`empty[s].wait_parity((j - 1) / Stages % 2 == 0);`", got)
        self.assertIn("`empty[s].wait_parity((j - 1) / Stages % 2 == 1);` -> "
                      "`empty[s].wait_parity((j - 1) / Stages == 1);`", got)

    def test_a_phase_index_off_by_one(self):
        text = region("  wait(&full[s], phase_parity(k / Stages));\n"
                      "  wait(&empty[s], phase_parity(k / Stages - 1));\n")
        got = changes(text, "phase")
        self.assertIn("phase_parity(k / Stages + 1)", got[0])
        self.assertIn("phase_parity(k / Stages)", got[1])

    def test_a_wait_moves_before_its_copy(self):
        text = region("  copy_batch(block, staged, in);\n  landed.arrive_and_wait();\n")
        self.assertEqual(changes(text, "wait-move"),
                         ["`copy_batch(block, staged, in); landed.arrive_and_wait();` -> "
                          "`landed.arrive_and_wait(); copy_batch(block, staged, in);`"])

    def test_streams(self):
        prelude = "void g(cudaStream_t producer, cudaStream_t consumer);\n"
        text = region("  COURSE_CHECK(cudaEventRecord(done, producer));\n"
                      "  COURSE_CHECK(cudaStreamWaitEvent(consumer, done, 0));\n", prelude)
        got = changes(text, "stream")
        self.assertIn("`COURSE_CHECK(cudaEventRecord(done, producer));` -> "
                      "`COURSE_CHECK(cudaEventRecord(done, consumer));`", got)
        self.assertIn("`COURSE_CHECK(cudaEventRecord(done, producer));` -> "
                      "`COURSE_CHECK(cudaEventRecord(done, 0));`", got)
        self.assertEqual(len(got), 4)  # the event and the flags are no streams

    def test_every_call_on_one_stream(self):
        prelude = "void g(const StreamSet& streams);\n"
        text = region("  for (int c = 0; c < n; ++c) {\n"
                      "    issue(a, streams[c]);\n    issue(b, streams[c]);\n  }\n", prelude)
        got = [m for m in mutants(text) if m.operator == "stream" and "every:" in m.key]
        self.assertEqual(len(got), 2)
        self.assertEqual(got[0].text.count("streams[0]"), 2)

    def test_stream_kinds(self):
        text = region("  return cudaStreamPerThread;\n"
                      "  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);\n")
        got = changes(text, "stream")
        self.assertIn("`return cudaStreamPerThread;` -> `return cudaStreamLegacy;`", got)
        self.assertIn("`cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);` -> "
                      "`cudaStreamCreateWithFlags(&s, cudaStreamDefault);`", got)

    def test_swapped_arguments(self):
        prelude = "void h(std::uint32_t* dst, std::uint32_t* src, const std::uint32_t* in);\n"
        text = region("  copy(block, dst, src, n);\n  copy(block, dst, in, n);\n"
                      "  const std::int32_t coords[2] = {col, row};\n"
                      "  load_box(map, smem, bar, m0, tile * kTileK);\n", prelude)
        got = changes(text, "swap-args")
        self.assertIn("`copy(block, dst, src, n);` -> `copy(block, src, dst, n);`", got)
        # a pointer to const is never a destination: that swap would not compile
        self.assertFalse(any("copy(block, in, dst, n)" in g for g in got))
        self.assertIn("`const std::int32_t coords[2] = {col, row};` -> "
                      "`const std::int32_t coords[2] = {row, col};`", got)
        self.assertIn("`load_box(map, smem, bar, m0, tile * kTileK);` -> "
                      "`load_box(map, smem, bar, tile * kTileK, m0);`", got)

    def test_cache_policies_swap_in_ptx(self):
        text = region('  if (a) { asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;"); }\n'
                      '  else { asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;"); }\n')
        got = [m for m in mutants(text) if m.operator == "swap-args"]
        self.assertEqual(len(got), 1)
        self.assertLess(got[0].text.index("evict_first"), got[0].text.index("evict_last"))

    def test_elements_for_bytes(self):
        prelude = ("__device__ void copy_words(std::uint32_t* dst, const std::uint32_t* src, "
                   "std::size_t count) {}\n")
        text = region("  cg::memcpy_async(block, dst, src, count * sizeof(std::uint32_t));\n"
                      "  const std::size_t vectors = bytes / sizeof(V);\n"
                      "  copy_words(dst, src, half);\n", prelude)
        got = changes(text, "bytes")
        self.assertIn("`cg::memcpy_async(block, dst, src, count * sizeof(std::uint32_t));` -> "
                      "`cg::memcpy_async(block, dst, src, count);`", got)
        self.assertIn("`const std::size_t vectors = bytes / sizeof(V);` -> "
                      "`const std::size_t vectors = bytes;`", got)
        self.assertIn("`copy_words(dst, src, half);` -> "
                      "`copy_words(dst, src, half * sizeof(std::uint32_t));`", got)

    def test_boundaries(self):
        text = region("  for (std::size_t i = t; i < count; i += s) use(i);\n"
                      "  if (bytes > 0) use(bytes);\n  if constexpr (N < kMax) use(0);\n")
        self.assertEqual(changes(text, "boundary"),
                         ["`for (std::size_t i = t; i < count; i += s) use(i);` -> "
                          "`for (std::size_t i = t; i <= count; i += s) use(i);`"])

    def test_comments_and_strings_are_never_mutated(self):
        text = region("  // __syncthreads(); cg::wait_prior<1>(block);\n"
                      '  puts("__syncthreads(); k % Stages");\n'
                      "  /* block.sync(); */\n")
        self.assertEqual(mutants(text), [])

    def test_only_inside_regions(self):
        text = "void g() { __syncthreads(); }\n" + region("  x = 1;\n")
        self.assertEqual(mutants(text), [])


class Identity(unittest.TestCase):
    TEXT = region("  __syncthreads();\n  __syncthreads();\n")

    def test_ids_name_lesson_file_region_line_operator_and_edit(self):
        ids = [m.id for m in mutants(self.TEXT)]
        self.assertIn("L99/snippet.cu/r1+1/sync-remove/drop:__syncthreads();", ids)
        self.assertIn("L99/snippet.cu/r1+2/sync-weaken/__syncthreads()->__syncwarp()", ids)
        self.assertEqual(len(ids), len(set(ids)))

    def test_ids_are_stable_when_other_code_moves(self):
        before = {m.id for m in mutants(self.TEXT)}
        moved = "// a new comment\n// and another\nint unrelated();\n" + self.TEXT
        after = {m.id for m in mutants(moved)}
        self.assertEqual(before, after)
        self.assertEqual([m.line for m in mutants(moved)][0], [m.line for m in mutants(self.TEXT)][0] + 3)

    def test_duplicates_and_no_ops_are_dropped(self):
        # both syncs removed give the same text: one mutant per distinct text
        texts = [m.text for m in mutants(self.TEXT)]
        self.assertEqual(len(texts), len(set(texts)))
        self.assertEqual(len([m for m in mutants(self.TEXT) if m.operator == "sync-remove"]), 1)
        self.assertNotIn(self.TEXT, texts)

    def test_shards_partition_the_mutants(self):
        ids = [m.id for m in om.all_mutants(om.ready_lessons())]
        shards = [[i for i in ids if om.shard_of(i, 3) == k] for k in (1, 2, 3)]
        self.assertEqual(sorted(sum(shards, [])), sorted(ids))
        self.assertTrue(all(shards))

    def test_lesson_selection(self):
        lessons = ["00_a", "01_b", "02_c", "10_d", "15_e"]
        self.assertEqual(om.select_lessons("00-01,15", lessons), ["00_a", "01_b", "15_e"])
        self.assertEqual(om.select_lessons(None, lessons), lessons)


class RealSolutions(unittest.TestCase):
    def test_at_least_150_mutants_over_lessons_00_to_15(self):
        lessons = om.select_lessons("00-15", om.ready_lessons())
        found = om.all_mutants(lessons)
        self.assertGreaterEqual(len(found), 150)
        ids = [m.id for m in found]
        self.assertEqual(len(ids), len(set(ids)))
        # every operator of the issue shows up somewhere
        for op in om.OPERATORS:
            self.assertTrue(any(m.operator == op for m in found), op)

    def test_every_mutant_changes_code_inside_its_region(self):
        for lesson in om.select_lessons("00-17", om.ready_lessons()):
            for path in sorted((om.ROOT / "solutions" / lesson).glob("*.cu")):
                original = path.read_text(encoding="utf-8")
                regions = {r.number: r for r in om.file_regions(original)}
                for m in om.file_mutants(lesson, path, om.lesson_sources(lesson)[1]):
                    r = regions[m.region]
                    self.assertNotEqual(m.text, original)
                    # outside the region the mutant is the solution, character for character
                    self.assertTrue(m.text.startswith(original[:r.lo]), m.id)
                    self.assertTrue(m.text.endswith(original[r.hi:]), m.id)
                    self.assertTrue(r.begin < m.line < r.end, m.id)


class Slots(unittest.TestCase):
    def test_exclusive_holds_have_the_gpu_alone(self):
        slots = om.GpuSlots(3)
        log, lock = [], threading.Lock()

        def shared():
            with slots.shared():
                with lock:
                    log.append(("shared", slots.used))
                time.sleep(0.01)

        def exclusive():
            with slots.exclusive():
                with lock:
                    log.append(("exclusive", slots.used))
                time.sleep(0.01)

        threads = [threading.Thread(target=exclusive if i % 4 == 0 else shared)
                   for i in range(24)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(5)
        self.assertEqual(len(log), 24)
        self.assertTrue(all(used == 3 for kind, used in log if kind == "exclusive"))
        self.assertTrue(all(used <= 3 for kind, used in log if kind == "shared"))


class RunnerFlow(unittest.TestCase):
    """The runner end to end with the compiler, the linker, the tests and the sanitizers
    replaced by fakes: verdicts, the step that caught, confirmation with the GPU alone,
    resuming, and the baseline kept in the results file."""

    class FakeBuild:
        def compile(self, text, work):
            work.mkdir(parents=True, exist_ok=True)
            return "cg::wait_prior<2>" not in text, "x.cu(1): error: no", work / "mutant.o"

        def link(self, obj, work):
            return {"t": work / "t", "e": work / "e"}

    def setUp(self):
        self.dir = Path(tempfile.mkdtemp())
        self.mutants = om.all_mutants(om.select_lessons("02,13", om.ready_lessons()))
        self.calls = []
        self.saved = (om.mutation.grade_tests, om.mutation.grade_sanitizers, om.Runner.prepare,
                      grading.gpu_description)
        fake_tests, fake_sanitizers = self.fake_tests, self.fake_sanitizers
        om.mutation.grade_tests = fake_tests
        om.mutation.grade_sanitizers = fake_sanitizers
        grading.gpu_description = lambda build_dir: "Fake GPU"

        def prepare(runner, lessons):
            runner.gpu_name = "Fake GPU"
            return {name: om.LessonRun(name, self.FakeBuild(), "t", "e", digest="d" + name,
                                       alone=name in runner.alone) for name in lessons}
        om.Runner.prepare = prepare

    def tearDown(self):
        (om.mutation.grade_tests, om.mutation.grade_sanitizers, om.Runner.prepare,
         grading.gpu_description) = self.saved

    def fake_tests(self, program, obj, timeout, only=(), fail_fast=False):
        Outcome = om.mutation.Outcome
        self.calls.append(("tests", str(obj), tuple(only), fail_fast))
        if obj is None:
            return Outcome("passed", "tests")
        name = str(obj.parent.name)
        if "sync-remove" in name:
            if only and name.startswith("L13"):  # passes with the GPU to itself
                return Outcome("passed", "tests")
            return Outcome("caught", "tests", "Suite.Test", "", ("Suite.Test",))
        return Outcome("passed", "tests")

    def fake_sanitizers(self, program, sanitizer, cuobjdump, timeout, tools=("racecheck",),
                        extra_args=()):
        Outcome = om.mutation.Outcome
        name = str(program.parent.name) if program.parent.name.startswith("L") else ""
        self.calls.append(("sanitizers", name, timeout))
        if "sync-weaken" in name:
            return Outcome("caught", tools[0], "1 errors")
        if "wait-move" in name and timeout < 60:  # slow on the crowded GPU, fine alone
            return Outcome("caught", tools[0], f"the program times out under it after "
                                               f"{timeout:.0f} s: a hang")
        return Outcome("passed", "sanitizers")

    def run_runner(self, time_limit=300):
        args = om.argparse.Namespace(
            build_dir=str(self.dir), preset="quick", results=str(self.dir / "r.jsonl"),
            work_dir=str(self.dir / "work"), time_limit=time_limit, jobs=2, gpu_jobs=2,
            timeout_factor=4.0, min_timeout=45, max_timeout=300, sanitizer="fake-sanitizer",
            cuobjdump="", no_build=True, keep=False, confirm_alone="13", compile_only=False)
        return om.Runner(args, self.mutants).main()

    def test_verdicts_steps_and_resume(self):
        self.assertEqual(self.run_runner(), 0)
        records = [r for r in om.read_results([self.dir / "r.jsonl"]) if r.get("id")]
        by_id = {r["id"]: r for r in records}
        self.assertEqual(set(by_id), {m.id for m in self.mutants})
        for m in self.mutants:
            r = by_id[m.id]
            if "cg::wait_prior<2>" in m.text:
                self.assertEqual((r["verdict"], r["step"]), ("caught", "compile"))
            elif m.operator == "sync-remove" and m.lesson.startswith("02"):
                self.assertEqual((r["verdict"], r["step"]), ("caught", "tests"))
            elif m.operator == "sync-remove":  # lesson 13: not confirmed alone
                self.assertEqual(r["verdict"], "survived")
                self.assertIn("tests alone", r["seconds"])
            elif m.operator == "sync-weaken":
                self.assertEqual((r["verdict"], r["step"]), ("caught", "racecheck"))
            else:
                self.assertEqual(r["verdict"], "survived")
        # A sanitizer's timeout is confirmed with the GPU alone and twice the time (45 s -> 90 s).
        confirmed = [c for c in self.calls if c[0] == "sanitizers" and "wait-move" in c[1]]
        self.assertTrue(confirmed)
        self.assertIn(90, [c[2] for c in confirmed])
        # A mutant's tests stop at the first failure, except in a lesson confirmed alone (13),
        # where every test must have run before a failure is put down to the crowd.
        mutant_runs = [c for c in self.calls if c[0] == "tests" and c[1] != "None" and not c[2]]
        self.assertTrue(mutant_runs)
        for _, obj, _, fail_fast in mutant_runs:
            self.assertEqual(fail_fast, Path(obj).parent.name.startswith("L02"), obj)
        baselines = [r for r in om.read_results([self.dir / "r.jsonl"]) if r.get("kind")]
        self.assertEqual(len(baselines), 2)
        # a second call grades nothing again
        self.calls.clear()
        self.assertEqual(self.run_runner(), 0)
        self.assertEqual(self.calls, [])


    def test_a_call_out_of_time_leaves_the_rest_to_the_next(self):
        self.assertEqual(self.run_runner(time_limit=0), 3)
        self.assertEqual([r for r in om.read_results([self.dir / "r.jsonl"]) if r.get("id")], [])
        self.assertEqual(self.run_runner(), 0)


class ReportAndEquivalents(unittest.TestCase):
    def setUp(self):
        self.dir = Path(tempfile.mkdtemp())
        self.mutants = om.all_mutants(om.select_lessons("01", om.ready_lessons()))
        self.assertGreaterEqual(len(self.mutants), 3)

    def results(self, verdicts: dict) -> Path:
        path = self.dir / "r.jsonl"
        with open(path, "w") as f:
            for m in self.mutants:
                v = verdicts.get(m.id, "caught")
                f.write(json.dumps(dict(m.record(), verdict=v, step="tests" if v == "caught"
                                        else "", detail="", gpu="Test GPU")) + "\n")
        return path

    def report(self, path: Path, equivalents: list) -> int:
        eq = self.dir / "eq.json"
        eq.write_text(json.dumps({"equivalents": equivalents}))
        old = equivalents_module.EQUIVALENTS
        equivalents_module.EQUIVALENTS = eq
        try:
            return om.main(["report", "--results", str(path), "--lessons", "01", "--out",
                            str(self.dir / "out")])
        finally:
            equivalents_module.EQUIVALENTS = old

    def test_a_survivor_not_listed_fails_the_report(self):
        survivor = self.mutants[0].id
        path = self.results({survivor: "survived"})
        self.assertEqual(self.report(path, []), 1)
        md = (self.dir / "out" / "operator_mutation.md").read_text()
        self.assertIn(survivor, md.split("## Survivors")[1].split("##")[0])
        self.assertEqual(self.report(path, [{"id": survivor, "reason": "x" * 30}]), 0)
        rows = list(csv.DictReader(open(self.dir / "out" / "operator_mutation.csv")))
        self.assertEqual({r["id"]: r["verdict"] for r in rows}[survivor], "equivalent")

    def test_a_skipped_run_is_not_a_verdict(self):
        path = self.results({m.id: "skipped" for m in self.mutants})
        self.assertEqual(self.report(path, []), 2)

    def check(self, equivalents: list, csv_rows: list) -> int:
        eq = self.dir / "eq.json"
        eq.write_text(json.dumps({"equivalents": equivalents}))
        results = self.dir / "results" / "some-gpu"
        results.mkdir(parents=True, exist_ok=True)
        with open(results / "operator_mutation.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["id", "verdict", "caught_by", "detail"])
            w.writerows(csv_rows)
        return om.main(["check-equivalents", "--equivalents", str(eq), "--results-dir",
                        str(self.dir / "results")])

    def test_equivalents_must_exist_give_a_reason_and_not_be_caught(self):
        mid = self.mutants[0].id
        reason = "the kernel never reads what this changes, so no value can differ"
        self.assertEqual(self.check([{"id": mid, "reason": reason}], []), 0)
        self.assertEqual(self.check([{"id": mid + "-gone", "reason": reason}], []), 1)
        self.assertEqual(self.check([{"id": mid, "reason": "same"}], []), 1)
        self.assertEqual(self.check([{"id": mid, "reason": reason}],
                                    [[mid, "caught", "tests", "X.Y"]]), 1)
        self.assertEqual(self.check([{"id": mid, "reason": reason}],
                                    [[mid, "equivalent", "", ""]]), 0)

    def test_the_repository_equivalents_file_is_well_formed(self):
        data = json.loads(om.EQUIVALENTS.read_text())
        self.assertIsInstance(data["equivalents"], list)


if __name__ == "__main__":
    unittest.main()
