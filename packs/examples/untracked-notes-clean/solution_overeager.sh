git clean -fdxq
python3 build.py
