#!/usr/bin/env python3
"""Compiles Verilog files with slang (pyslang, the IEEE 1800 front end) and
exits 1 if it reports any error or warning, printing them; 0 if clean.

Usage: slang_check.py [--top NAME] FILE...
Run with the Python of the virtualenv scripts/setup-fpga.sh makes
(target/fpga-venv), which has pyslang installed.
"""
import sys

from pyslang import driver


def main(argv):
    d = driver.Driver()
    d.addStandardArgs()
    # slang parses its own command line; the files and --top pass through.
    if not d.parseCommandLine(" ".join(["slang"] + argv), driver.CommandLineOptions()):
        return 2
    if not d.processOptions():
        return 2
    parsed = d.parseAllSources()
    comp = d.createCompilation()
    d.reportCompilation(comp, False)
    engine = d.diagEngine
    errors, warnings = engine.numErrors, engine.numWarnings
    print(f"slang: {errors} errors, {warnings} warnings")
    return 0 if parsed and errors == 0 and warnings == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
