sed -i 's/struct.pack(">H", v)/struct.pack("<H", v)/' encoder.py
python3 -m unittest -q
