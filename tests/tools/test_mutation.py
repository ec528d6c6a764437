#!/usr/bin/env python3
"""CPU tests of tools/mutation.py: finding the regions, making a mutant, rewriting the
build's compile and link commands for it."""
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import mutation  # noqa: E402

SOLUTION = """\
int f(int x) {
  // TODO 1: double it.
  // BEGIN SOLUTION
  x *= 2;
  // END SOLUTION
  // TODO 2: add one, then return it.
  // BEGIN SOLUTION
  x += 1;
  return x;
  // STARTER: return 0;
  // END SOLUTION
}
"""


class MutationTest(unittest.TestCase):
    def test_sanitizers_are_told_the_lessons_expected_api_errors(self):
        # A correct lesson 16 or 17 program meets these errors on purpose: without them every
        # mutant (and every student's check) would look caught by memcheck.
        self.assertEqual(mutation.expected_api_errors("16_peer_to_peer"),
                         ["--expected-api-error", "cudaErrorPeerAccessAlreadyEnabled"])
        self.assertIn("cudaErrorNoKernelImageForDevice",
                      mutation.expected_api_errors("17_nccl_overlap"))
        self.assertEqual(mutation.expected_api_errors("01_register_staged"), [])

    def test_regions_know_their_todo_and_lines(self):
        found = mutation.regions(SOLUTION)
        self.assertEqual([(r["region"], r["todo"], r["begin"], r["end"]) for r in found],
                         [(1, "1", 3, 5), (2, "2", 7, 11)])

    def test_one_reader_of_regions_for_the_cli_the_graders_and_the_lints(self):
        from course_cli import regions, starter
        import files_per_exercise
        import lint_answers
        self.assertIs(mutation.regions, regions.regions)
        self.assertIs(files_per_exercise.regions, regions.regions)
        self.assertIs(lint_answers.regions, regions.regions)
        self.assertIs(starter.STARTER_RE, regions.STARTER_RE)
        lines = SOLUTION.splitlines()
        second = regions.regions(SOLUTION)[1]
        # the code a student writes: between BEGIN and END, without the STARTER line
        self.assertEqual(regions.answer_lines(lines, second), ["  x += 1;", "  return x;"])

    def test_a_mutant_replaces_one_region_only(self):
        first = mutation.mutant_text(SOLUTION, 1)
        self.assertNotIn("x *= 2;", first)
        self.assertIn("x += 1;", first)
        second = mutation.mutant_text(SOLUTION, 2)
        self.assertIn("x *= 2;", second)
        self.assertNotIn("x += 1;", second)
        self.assertIn("  return 0;\n", second)
        for mutant in (first, second):
            self.assertNotIn("BEGIN SOLUTION", mutant)
            self.assertNotIn("STARTER:", mutant)

    def test_compile_command_is_redirected_and_loses_werror_and_depfiles(self):
        command = ("/usr/bin/ccache nvcc -O3 -Xcompiler=-Werror -Werror=all-warnings -MD -MT "
                   "a.o -MF a.o.d -x cu -c /src/x_unit.cu -o lessons/x/a.o")
        args = mutation.rewrite_compile(command, Path("/src/x_unit.cu"), Path("/w/m_unit.cu"),
                                        Path("/w/m.o"))
        self.assertEqual(args, ["/usr/bin/ccache", "nvcc", "-O3", "-x", "cu", "-c",
                                "/w/m_unit.cu", "-o", "/w/m.o"])


if __name__ == "__main__":
    unittest.main()
