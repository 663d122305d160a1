"""Step 1-2 of run2.sh: the ragged experiment's 4353-channel conv pair alone (4353 against 4352 channels), so that
it fits a device call beside its before twin (the whole conv part of the experiment ran past 150 s cold on an H100)."""
import sys

from benchmarks.experiments.ragged import PAIRS, main

if __name__ == "__main__":
    main(sys.argv[1], ["causal_conv1d"], [p for p in PAIRS if p[0] == "causal_conv1d" and "4353" in p[3]])
