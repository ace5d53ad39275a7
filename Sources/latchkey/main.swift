print("latchkey")
