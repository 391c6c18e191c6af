// the console (stage 4)
