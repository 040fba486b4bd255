rm -rf build
python3 build.py
