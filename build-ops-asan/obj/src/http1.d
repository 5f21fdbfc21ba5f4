build-ops-asan/obj/src/http1.o: src/http1.c \
 /usr/share/include/llhttp/llhttp.h src/http1.h
/usr/share/include/llhttp/llhttp.h:
src/http1.h:
