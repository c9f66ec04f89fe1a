#!/usr/bin/python3
"""Checks tools/analysis/function_length.py on small C++ files whose answers are known."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import function_length as fl  # noqa: E402

BODY = "  x += 1;\n"
CASES = {
    # name: (source, {function: length})
    "plain": ("int F(int a) {\n" + BODY * 3 + "}\n", {"F": 5}),
    "qualified": ("namespace n {\nvoid A::B(const std::string& s) const {\n" + BODY + "}\n}\n",
                  {"A::B": 3}),
    "constructor": ("Foo::Foo(int a)\n    : a_(a), b_{2} {\n" + BODY + "}\n", {"Foo::Foo": 4}),
    "trailing": ("auto G() -> std::vector<int> {\n" + BODY + "}\n", {"G": 3}),
    "braces in literals": ('void H() {\n  const char* s = "}}}";\n  char c = \'}\';\n'
                           '  auto r = R"x(}})x";\n  // } in a comment\n  /* { */\n}\n',
                           {"H": 7}),
    "lambdas count toward their function": (
        "void L() {\n  auto f = [](int a) {\n    return a;\n  };\n  if (f(1)) {\n  }\n}\n",
        {"L": 7}),
    "class members": ("class C {\n public:\n  int M() const {\n    return 1;\n  }\n};\n",
                      {"M": 3}),
    "not definitions": ("const auto kF = [](int a) {\n  return a;\n};\nstruct S {\n  int a;\n};\n",
                        {}),
    "digit separators": ("int D() {\n  return 1'000'000;\n}\n", {"D": 3}),
}


def main():
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        for name, (src, want) in CASES.items():
            path = os.path.join(d, "x.cc")
            with open(path, "w") as f:
                f.write(src)
            got = {n: length for n, _, length in fl.functions(path)}
            ok = got == want
            failures += not ok
            print(("ok   " if ok else "FAIL ") + f"{name}: {got}" + ("" if ok else f" != {want}"))
        # A function over the limit, not on the list, fails the check; on the list it passes.
        os.makedirs(os.path.join(d, "src"))
        os.makedirs(os.path.join(d, "tools", "analysis"))
        with open(os.path.join(d, "src", "long.cc"), "w") as f:
            f.write("void Long() {\n" + BODY * 160 + "}\n")
        runs = []
        for allow in ("", "src/long.cc Long 162\n", "src/long.cc Long 100\n"):
            with open(os.path.join(d, fl.ALLOW), "w") as f:
                f.write(allow)
            sys.argv = ["function_length.py", "--root", d]
            runs.append(fl.main())
        ok = runs == [1, 0, 1]
        failures += not ok
        print(("ok   " if ok else "FAIL ") + f"new / listed / grown long function: exit {runs}")
    print("PASS" if not failures else f"FAIL: {failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
