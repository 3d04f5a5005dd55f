# paper.mk — the report rule, included by the Makefile.
#   make paper RESULTS="a.h5 [b.h5 ...]"   install missing TeX packages, then write
#                                          paper/out/report.pdf from the results files
.PHONY: paper
paper: $(BUILD)/topkp
	TOPKP=$(BUILD)/topkp BASELINE=$(BASELINE) bash paper/build.sh $(RESULTS)
