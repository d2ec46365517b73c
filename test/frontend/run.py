"""Runs one frontend unittest module for ctest; the closing line gives the
counts and the exit status is non-zero when anything failed.

usage: .venv/bin/python run.py test_plans
"""
import sys
import time
import unittest


def main():
    name = sys.argv[1]
    suite = unittest.defaultTestLoader.loadTestsFromName(name)
    start = time.time()
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
    bad = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    passed = result.testsRun - bad - len(result.skipped)
    print(f"{name}: {result.testsRun} tests, {passed} passed, "
          f"{len(result.failures)} failed, {len(result.errors)} errors, "
          f"{len(result.skipped)} skipped in {time.time() - start:.1f}s")
    return 1 if bad or result.testsRun == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
