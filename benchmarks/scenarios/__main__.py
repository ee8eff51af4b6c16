"""``python -m benchmarks.scenarios``: run the scenario suite."""

from benchmarks.scenarios.run import main

if __name__ == "__main__":
    main()
