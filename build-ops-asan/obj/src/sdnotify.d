build-ops-asan/obj/src/sdnotify.o: src/sdnotify.c src/sdnotify.h
src/sdnotify.h:
