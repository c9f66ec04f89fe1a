#!/usr/bin/python3
"""Writes scikit-learn's bundled digits and breast-cancer data sets as CSV for `seedance train`.

Usage: export_datasets.py OUT_DIR
Writes OUT_DIR/digits.csv (1,797 rows: 64 pixel columns p0..p63, then `label` 0..9) and
OUT_DIR/breast_cancer.csv (569 rows: 30 feature columns, then `label` 0/1). Both ship inside
Debian's python3-sklearn (no download). Exit 77 when scikit-learn is missing (the CTest skip
code), unless SEEDANCE_REQUIRE_DATA=1, then 1.
"""
import os
import sys


def write(path, names, x, y):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(",".join(names + ["label"]) + "\n")
        for row, label in zip(x, y):
            f.write(",".join(repr(float(v)) for v in row) + "," + str(int(label)) + "\n")
    os.replace(tmp, path)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        from sklearn import datasets
    except ImportError as e:
        print(f"export_datasets: scikit-learn missing ({e}); apt-get install python3-sklearn",
              file=sys.stderr)
        return 1 if os.environ.get("SEEDANCE_REQUIRE_DATA") == "1" else 77
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    digits = datasets.load_digits()
    write(os.path.join(out, "digits.csv"), [f"p{i}" for i in range(64)], digits.data,
          digits.target)
    cancer = datasets.load_breast_cancer()
    names = [n.replace(" ", "_") for n in cancer.feature_names]
    write(os.path.join(out, "breast_cancer.csv"), names, cancer.data, cancer.target)
    print(f"export_datasets: wrote digits.csv and breast_cancer.csv to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
