build-ops-asan/obj/src/resp.o: src/resp.c src/resp.h src/wire.h
src/resp.h:
src/wire.h:
