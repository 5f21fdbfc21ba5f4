build-ops-asan/obj/src/balance.o: src/balance.c src/balance.h
src/balance.h:
