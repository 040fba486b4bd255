# Re-record the golden file from the current (buggy) output, as the test runner offers.
UPDATE_GOLDEN=1 python3 -m unittest -q
python3 -m unittest -q
