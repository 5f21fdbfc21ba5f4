build-ops-asan/obj/src/net.o: src/net.c src/net.h
src/net.h:
