build-ops-asan/obj/src/deadline.o: src/deadline.c src/deadline.h
src/deadline.h:
