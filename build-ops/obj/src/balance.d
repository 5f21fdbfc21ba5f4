build-ops/obj/src/balance.o: src/balance.c src/balance.h
src/balance.h:
